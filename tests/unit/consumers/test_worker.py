"""The worker on the embedded pipeline: local queue -> processor -> SQLite store, dead letters."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry
from support.chunks import fake_chunker
from support.waiting import wait_until

from consumers.commit_policy import CommitPolicy
from consumers.local_dead_letters import LocalDeadLetterSink
from consumers.worker import Worker
from events.model import Action, ChangeEvent
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from store.sqlite import SQLiteStore
from transport.local_clients import LocalQueueConsumer, LocalQueuePublisher
from transport.local_queue import ConsumerBusy, LocalQueue

TOPIC = "changes"


def upsert(doc: str, version: int, content: str) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc, action=Action.UPSERT, version=version,
        changed_at=datetime(2024, 1, version, tzinfo=UTC), content_type="text/markdown",
        content=content,
    )


def run_until_drained(queue: LocalQueue, store: SQLiteStore) -> CollectorRegistry:
    registry = CollectorRegistry()
    worker = Worker(
        LocalQueueConsumer(queue, TOPIC), Indexer(store, chunk=fake_chunker),
        LocalDeadLetterSink(queue, TOPIC), metrics=WorkerMetrics.create(registry),
        commit=CommitPolicy(max_records=2, max_interval_s=0.1), poll_timeout_s=0.05,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    wait_until(lambda: queue.pending(TOPIC), 20, "the worker to drain the queue", every_s=0.02,
               accept=lambda n: n == 0)
    worker.request_stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    return registry


def test_events_become_chunks_and_poison_becomes_dead_letters(
    queue: LocalQueue, sqlite_store: SQLiteStore
) -> None:
    publisher = LocalQueuePublisher(queue, TOPIC)
    publisher.publish(upsert("refund", 1, "alpha one\n\nbeta two"))
    boom = upsert("boom", 1, "BOOM").to_json_bytes()
    queue.append(TOPIC, [(b"x", b"{not json"), (b"boom", boom)])
    publisher.publish(upsert("refund", 2, "alpha again"))
    registry = run_until_drained(queue, sqlite_store)
    assert [r.chunk_id for r in sqlite_store.iter_chunks()] == ["refund@v2#alpha"]
    hits = sqlite_store.search("alpha", access_labels=[])
    assert [h.chunk_id for h in hits] == ["refund@v2#alpha"]
    letters = queue.dead_letters(TOPIC)
    assert [(d.key, d.reason, d.source_offset) for d in letters] == [
        (b"x", "not_json", 2), (b"boom", "chunker", 3)
    ]
    assert queue.pending(TOPIC) == 0
    def events(outcome: str) -> float | None:
        return registry.get_sample_value("policy_indexer_events_total", {"outcome": outcome})

    # One batch: only refund's newest version is written, the older counts as stale.
    assert (events("indexed"), events("skipped_stale"), events("dead_lettered")) == (1, 1, 2)


def test_an_event_taken_but_not_committed_is_processed_after_a_restart(
    queue: LocalQueue, sqlite_store: SQLiteStore
) -> None:
    LocalQueuePublisher(queue, TOPIC).publish_many(
        [upsert("d", 1, "alpha"), upsert("d", 2, "beta")]
    )
    crashed = LocalQueueConsumer(queue, TOPIC)
    crashed.subscribe()
    assert len(crashed.poll(10, 0.1)) == 2  # then dies before any commit
    run_until_drained(queue, sqlite_store)
    assert [r.chunk_id for r in sqlite_store.iter_chunks()] == ["d@v2#beta"]


def test_one_consumer_per_topic_until_its_process_dies(queue: LocalQueue) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with sqlite3.connect(queue.path) as conn:
            conn.execute(
                "INSERT INTO consumer_leases VALUES (?, ?, ?, ?)",
                # not renewed for ages: a live holder on this host is busy, not gone
                (TOPIC, os.uname().nodename, other.pid, 0.0),
            )
        with pytest.raises(ConsumerBusy, match=f"pid {other.pid}"):
            LocalQueueConsumer(queue, TOPIC)
    finally:
        other.kill()
        other.wait()
    LocalQueueConsumer(queue, TOPIC).close()  # the dead holder's lease is taken over
