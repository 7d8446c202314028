from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

from reindex.backends_es import ElasticsearchLeaseBackend
from reindex.backends_sqlite import SchedulerDatabase
from reindex.lease import InMemoryLeaseBackend, Lease, LeaseBackend, LeaseRecord

T0 = datetime(2026, 3, 1, 2, 0, tzinfo=UTC)
TTL = timedelta(minutes=5)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture(params=[
    "memory", "sqlite", pytest.param("elasticsearch", marks=pytest.mark.services),
])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LeaseBackend]:
    """The same lease contract on every backend."""
    if request.param == "memory":
        yield InMemoryLeaseBackend()
        return
    if request.param == "elasticsearch":
        url = request.getfixturevalue("elasticsearch_url")
        prefix = request.getfixturevalue("unique")
        client = Elasticsearch(url)
        es = ElasticsearchLeaseBackend(client, prefix)
        es.ensure_ready()
        yield es
        client.options(ignore_status=404).indices.delete(index=es.index)
        client.close()
        return
    database = SchedulerDatabase(tmp_path / "scheduler.sqlite3")
    database.ensure_ready()
    yield database
    database.close()


def test_one_holder_at_a_time_until_release_or_expiry(backend: LeaseBackend) -> None:
    clock = Clock()
    lease = Lease(backend, clock=clock)
    mine, _ = lease.acquire("reconcile", "a", TTL)
    assert mine is not None
    theirs, why = lease.acquire("reconcile", "b", TTL)
    assert theirs is None and why is not None and "held by a" in why
    assert lease.acquire("sweep", "b", TTL)[0] is not None  # one lease per job

    clock.now += TTL + timedelta(seconds=1)  # a crashed holder loses it
    theirs, _ = lease.acquire("reconcile", "b", TTL)
    assert theirs is not None
    assert lease.renew(mine, TTL) is None  # the old holder cannot renew or release it
    lease.release(mine)
    assert lease.acquire("reconcile", "c", TTL)[0] is None

    lease.release(theirs)
    assert lease.acquire("reconcile", "c", TTL)[0] is not None


def test_renewal_keeps_it(backend: LeaseBackend) -> None:
    clock = Clock()
    lease = Lease(backend, clock=clock)
    mine, _ = lease.acquire("reconcile", "a", TTL)
    assert mine is not None
    for _ in range(5):
        clock.now += TTL / 2
        renewed = lease.renew(mine, TTL)
        assert renewed is not None
        mine = renewed
    assert lease.acquire("reconcile", "b", TTL)[0] is None


def test_a_scheduled_occurrence_runs_once_even_after_a_fast_release(
    backend: LeaseBackend,
) -> None:
    clock = Clock()
    lease = Lease(backend, clock=clock)
    spacing = timedelta(minutes=30)  # the misfire grace
    mine, _ = lease.acquire("reconcile", "a", TTL, spacing=spacing)
    assert mine is not None
    clock.now += timedelta(seconds=20)
    lease.release(mine)  # a fast run is over
    clock.now += timedelta(seconds=10)  # a slower replica fires the same 02:00
    late, why = lease.acquire("reconcile", "b", TTL, spacing=spacing)
    assert late is None and why is not None and "already run for this occurrence" in why
    assert lease.acquire("reconcile", "b", TTL)[0] is not None  # by hand: allowed

    clock.now += timedelta(days=1)  # the next night
    assert lease.acquire("reconcile", "b", TTL, spacing=spacing)[0] is not None


def test_compare_and_set_lets_one_of_two_simultaneous_takers_win(backend: LeaseBackend) -> None:
    lease = Lease(backend, clock=Clock())
    _, cas = backend.read("reconcile")  # both read "nobody holds it"
    a = Lease(backend, clock=Clock())
    assert a.acquire("reconcile", "a", TTL)[0] is not None
    late = LeaseRecord("reconcile", "b", "tok", T0 + TTL)
    assert backend.write(late, cas) is False
    assert lease.acquire("reconcile", "b", TTL)[0] is None
