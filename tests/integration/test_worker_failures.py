"""Crashes, an Elasticsearch outage and poison events: the index still ends exactly right."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.index_equality import ExpectedIndex, assert_index_equals, expected_index
from support.kafka_admin import group_lag
from support.kafka_helpers import publish_events, read_all, wait_for_lag_zero
from support.tcp_proxy import TcpProxy
from support.waiting import wait_until
from support.workers import Pipeline, free_port, healthz

from consumers.dead_letter import DeadLetter
from events.model import Action, ChangeEvent, EventMetadata
from store.elasticsearch import ElasticsearchStore

pytestmark = [pytest.mark.services, pytest.mark.corpus, pytest.mark.slow]

# The n-th batch of 10 events (the worker checkpoints once per polled batch).
# The last kill is off the hooks: once the group's committed offsets show that
# worker's first 20 records committed, at once, wherever it is in the next batch.
KILL_POINTS = [
    "after-chunk-write:3",   # chunks written, states not yet
    "after-state-write:5",   # states written, delete step not yet
    "after-delete-step:4",   # delete step done, offsets not committed
    "after-commit:2",        # right after a commit
    "after-chunk-write:8",
]
COMMITTED_BEFORE_THE_LAST_KILL = 20


def test_sigkill_at_every_step_and_restart_gives_the_same_state(
    pipeline: Pipeline, pipeline_store: ElasticsearchStore, tmp_path: Path,
    basecamp_events: list[ChangeEvent], basecamp_expected: ExpectedIndex,
) -> None:
    publish_events(pipeline.kafka, pipeline.topic, basecamp_events)
    killed = []
    for spec in KILL_POINTS:
        worker = pipeline.start_worker(tmp_path, kill_at=spec, commit_every_records="10")
        worker.proc.wait(timeout=120)
        killed.append((spec, worker.proc.returncode))

    def lag() -> int | None:
        return group_lag(pipeline.kafka, pipeline.group, pipeline.topic)

    before = lag()
    assert before is not None and before > 2 * COMMITTED_BEFORE_THE_LAST_KILL, before
    worker = pipeline.start_worker(tmp_path, commit_every_records="10")
    wait_until(lag, 120, f"the worker to commit {COMMITTED_BEFORE_THE_LAST_KILL} records",
               every_s=0.1,
               accept=lambda n: n is not None and n <= before - COMMITTED_BEFORE_THE_LAST_KILL)
    worker.kill()  # at once: wherever it is in the batch after those commits
    killed.append(("mid-batch", worker.proc.returncode))
    assert all(code == -9 for _, code in killed), killed
    assert group_lag(pipeline.kafka, pipeline.group, pipeline.topic) != 0  # work was left
    final = pipeline.start_worker(tmp_path)
    try:
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic)
        assert final.stop() == 0
    finally:
        final.kill()
    assert_index_equals(pipeline_store, basecamp_expected)
    assert read_all(pipeline.kafka, pipeline.dead_letter_topic, expect=0, timeout_s=1) == []


@pytest.fixture
def es_proxy(pipeline: Pipeline) -> Iterator[TcpProxy]:
    host, port = pipeline.elasticsearch.removeprefix("http://").split(":")
    proxy = TcpProxy(host, int(port))
    yield proxy
    proxy.close()



def test_elasticsearch_gone_for_20_seconds_mid_replay_loses_nothing(  # noqa: PLR0917 (fixtures)
    pipeline: Pipeline, pipeline_store: ElasticsearchStore, tmp_path: Path, es_proxy: TcpProxy,
    basecamp_events: list[ChangeEvent], basecamp_expected: ExpectedIndex,
) -> None:
    port = free_port()
    worker = pipeline.start_worker(
        tmp_path, elasticsearch_url=es_proxy.url, metrics_port=str(port),
        elasticsearch_timeout_seconds="3", commit_every_records="20",
    )
    try:
        publish_events(pipeline.kafka, pipeline.topic, basecamp_events)
        lag = wait_until(lambda: group_lag(pipeline.kafka, pipeline.group, pipeline.topic), 60,
                         "the worker to commit its first changes", every_s=0.2,
                         accept=lambda n: n not in (None, 362))
        es_proxy.cut()
        cut_at = time.monotonic()
        statuses = set()
        while time.monotonic() - cut_at < 20:
            statuses.add(healthz(port)["status"])
            time.sleep(0.5)
        lag_during = group_lag(pipeline.kafka, pipeline.group, pipeline.topic)
        es_proxy.restore()
        assert "retrying" in statuses, statuses
        assert lag_during and lag_during > 0, "the outage came too late to matter"
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic)
        assert healthz(port)["status"] == "ok"
        assert worker.stop() == 0
    finally:
        worker.kill()
    assert es_proxy.refused > 0
    assert lag is not None
    assert_index_equals(pipeline_store, basecamp_expected)
    assert read_all(pipeline.kafka, pipeline.dead_letter_topic, expect=0, timeout_s=1) == []


def _event(doc: str, version: int, content: str | None, **meta: object) -> ChangeEvent:
    from datetime import UTC, datetime

    return ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc,
        action=Action.UPSERT if content is not None else Action.DELETE, version=version,
        changed_at=datetime(2024, 2, version, tzinfo=UTC),
        content_type="text/markdown" if content is not None else None, content=content,
        metadata=EventMetadata(**meta),
    )


def test_each_kind_of_poison_is_dead_lettered_and_later_events_still_index(
    pipeline: Pipeline, pipeline_store: ElasticsearchStore, tmp_path: Path,
) -> None:
    good = [
        _event("alpha", 1, "# Alpha\n\nFirst version.\n"),
        _event("beta", 1, "# Beta\n\nBeta text.\n"),
        _event("alpha", 2, "# Alpha\n\nSecond version.\n\n## More\n\nMore text.\n"),
    ]
    schema_bad = json.dumps({"event_id": "x", "document_id": "bad#id", "action": "delete",
                             "version": 1, "changed_at": "2024-01-01T00:00:00Z"}).encode()
    poison = {
        "not_json": (b"k1", b"\xff\xfe not json at all"),
        "schema": (b"k2", schema_bad),
        # (A NUL in the content, or a label no store holds, is refused by the event's own
        # schema: see tests/unit/events/test_change_event_limits.py.)
        "chunker": (b"gamma", _event("gamma", 1, "---\nk: " + "[" * 5_000 + "]" * 5_000
                                     + "\n---\n# Gamma\n").to_json_bytes()),
        "limits": (b"delta", _event("delta", 1, "---\naccess_labels: [" + "L" * 300
                                    + "]\n---\n# Delta\n\nText.\n").to_json_bytes()),
    }
    stream: list[ChangeEvent | tuple[bytes, bytes | None]] = [
        good[0], *poison.values(), good[1], good[2],
    ]
    worker = pipeline.start_worker(tmp_path)
    try:
        publish_events(pipeline.kafka, pipeline.topic, stream)
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic)
        assert worker.stop() == 0
    finally:
        worker.kill()
    letters = read_all(pipeline.kafka, pipeline.dead_letter_topic, expect=4)
    by_reason = {DeadLetter.read_headers(r.headers)["reason"]: r for r in letters}
    assert sorted(by_reason) == sorted(poison)
    for reason, (key, value) in poison.items():
        record = by_reason[reason]
        headers = DeadLetter.read_headers(record.headers)
        assert (record.key, record.value) == (key, value)
        assert headers["error"]
        assert headers["source-topic"] == pipeline.topic
        assert int(headers["source-offset"]) >= 0 and int(headers["source-partition"]) >= 0
    assert "document_id" in DeadLetter.read_headers(by_reason["schema"].headers)["error"]
    assert_index_equals(pipeline_store, expected_index(good))


def test_sigterm_while_backing_off_exits_promptly_and_a_restart_finishes(
    pipeline: Pipeline, pipeline_store: ElasticsearchStore, tmp_path: Path, es_proxy: TcpProxy,
    basecamp_events: list[ChangeEvent],
) -> None:
    port = free_port()
    worker = pipeline.start_worker(
        tmp_path, elasticsearch_url=es_proxy.url, metrics_port=str(port),
        commit_every_records="20",
    )
    try:
        publish_events(pipeline.kafka, pipeline.topic, basecamp_events)
        started = time.monotonic()  # both waits share one 60 s budget
        wait_until(lambda: group_lag(pipeline.kafka, pipeline.group, pipeline.topic), 60,
                   "the worker to commit its first changes", every_s=0.2,
                   accept=lambda n: n not in (None, 362))
        es_proxy.cut()
        wait_until(lambda: healthz(port)["status"], 60 - (time.monotonic() - started),
                   "the worker to notice the outage", every_s=0.2,
                   accept=lambda status: status == "retrying")
        assert worker.stop(timeout_s=15) == 0  # stops waiting at once, commits what is done
    finally:
        worker.kill()
        es_proxy.restore()
    assert group_lag(pipeline.kafka, pipeline.group, pipeline.topic) != 0
    restarted = pipeline.start_worker(tmp_path)
    try:
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic)
        assert restarted.stop() == 0
    finally:
        restarted.kill()
    assert_index_equals(pipeline_store, expected_index(basecamp_events))
