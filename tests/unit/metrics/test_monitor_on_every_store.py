"""The monitor needs only the Store protocol: the same cycle on every store implementation."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from support.chunks import make_chunk
from support.source_fakes import ListSource
from support.stores import STORE_FACTORIES, StoreFactory

from metrics.monitor import FreshnessMonitor
from sources.base import SourceEntry
from store.base import Store
from store.model import DocumentState

NOW = datetime.now(UTC).replace(microsecond=0)
MIN = timedelta(minutes=1)


@pytest.fixture(params=STORE_FACTORIES)
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    factory: StoreFactory = request.param
    with factory(request) as made:
        yield made


def put(store: Store, doc: str, version: int, *, chunk_versions: tuple[int, ...] = (),
        deleted: bool = False, indexed_ago: timedelta = 30 * MIN) -> None:
    store.write_chunks([make_chunk(doc, v, "intro") for v in chunk_versions])
    store.put_state(DocumentState(doc, version, NOW - 60 * MIN, NOW - indexed_ago,
                                  deleted=deleted))


def test_one_cycle_on_this_store(store: Store) -> None:
    source = ListSource()
    for doc, version, ago in (("current", 2, 90), ("behind", 3, 7), ("missing", 1, 4),
                              ("leftover", 2, 90)):
        source.put(SourceEntry(doc, version, NOW - ago * MIN))
    source.put(SourceEntry("gone", 2, NOW - 50 * MIN, deleted=True))
    put(store, "current", 2, chunk_versions=(2,))
    put(store, "behind", 2, chunk_versions=(2,))
    put(store, "leftover", 2, chunk_versions=(1, 2), indexed_ago=20 * MIN)  # v1 not deleted
    put(store, "gone", 2, chunk_versions=(1,), deleted=True, indexed_ago=45 * MIN)
    store.refresh()

    snapshot = FreshnessMonitor(source, store, max_series=10,
                                clock=lambda: NOW).run_cycle()

    assert snapshot is not None
    assert (snapshot.source_documents, snapshot.indexed_documents) == (4, 3)
    assert snapshot.behind_by_status == {"behind": 1, "missing_from_index": 1,
                                         "deleted_at_source": 0}
    assert snapshot.max_lag_seconds(NOW) == 7 * 60
    assert [lag.document_id for lag in snapshot.most_lagging] == ["behind", "missing"]
    assert (snapshot.leftover_versions, snapshot.leftover_documents) == (2, 2)
    assert snapshot.leftover_since == NOW - 45 * MIN
    assert snapshot.chunks_examined == 5
