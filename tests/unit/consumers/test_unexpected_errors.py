"""An exception neither poison nor transient is that record's problem only.

On the embedded pipeline (the local queue and the SQLite index, for real), with a
chunker stand-in that fails the way a bug would for one document: the worker tries
that record a bounded number of times, dead-letters it with the document and the
exception, indexes the others of its batch and later batches, and never stops.
A transient failure is still retried until it passes, not dead-lettered.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from support.chunks import fake_chunker
from support.waiting import wait_until

from chunker.model import Chunk
from consumers.commit_policy import CommitPolicy
from consumers.handling import UnexpectedErrors
from consumers.local_dead_letters import LocalDeadLetterSink
from consumers.retry import RetryPolicy
from consumers.worker import Worker
from events.model import Action, ChangeEvent
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from store.errors import TransientStoreError
from store.sqlite import SQLiteStore
from transport.local_clients import LocalQueueConsumer, LocalQueuePublisher
from transport.local_queue import LocalQueue

TOPIC = "changes"


def upsert(doc: str, version: int = 1) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc, action=Action.UPSERT, version=version,
        changed_at=datetime(2024, 1, 1, tzinfo=UTC), content_type="text/markdown",
        content=f"alpha {doc} v{version}",
    )


class Chunker:
    """``fake_chunker``, except for ``bug`` (always an OverflowError) and ``flaky`` (one
    transient failure); counts its calls per document."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def __call__(self, document_id: str, version: int, content: str, *,
                 content_type: str = "text/markdown",
                 metadata: Mapping[str, object] | None = None, changed_at: Any = None,
                 ) -> list[Chunk]:
        self.calls[document_id] += 1
        if document_id == "bug":
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        if document_id == "flaky" and self.calls[document_id] == 1:
            raise TransientStoreError("index away for a moment")
        return fake_chunker(document_id, version, content, content_type=content_type,
                            metadata=metadata, changed_at=changed_at)


def test_a_record_that_keeps_raising_is_dead_lettered_after_three_tries_and_the_rest_go_on(
    queue: LocalQueue, sqlite_store: SQLiteStore
) -> None:
    publisher = LocalQueuePublisher(queue, TOPIC)
    publisher.publish_many([upsert("before"), upsert("bug"), upsert("flaky"), upsert("after")])
    chunker = Chunker()
    registry = CollectorRegistry()
    worker = Worker(
        LocalQueueConsumer(queue, TOPIC), Indexer(sqlite_store, chunk=chunker),
        LocalDeadLetterSink(queue, TOPIC), metrics=WorkerMetrics.create(registry),
        retry=RetryPolicy(initial_s=0.01, max_s=0.02, jitter_s=0.0),
        commit=CommitPolicy(max_records=2, max_interval_s=0.1), poll_timeout_s=0.05,
        unexpected_attempts=3,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        wait_until(lambda: queue.pending(TOPIC), 20, "the worker to drain the queue",
                   every_s=0.02, accept=lambda n: n == 0)
        publisher.publish(upsert("later"))  # the worker still runs and takes more
        wait_until(lambda: sqlite_store.get_state("later"), 20, "a later event to be indexed",
                   every_s=0.02, accept=lambda s: s is not None)
        assert thread.is_alive()
    finally:
        worker.request_stop()
        thread.join(timeout=10)
    letters = queue.dead_letters(TOPIC)
    assert [(d.key, d.reason) for d in letters] == [(b"bug", "unexpected")]
    assert "document 'bug': failed 3 times: OverflowError: Python int too large" in (
        letters[0].error)
    # The batch once (which record failed is not known then), the record alone 3 times;
    # the batch's retry after flaky's transient failure does not try it again.
    assert chunker.calls["bug"] == 1 + 3
    indexed = {doc for doc in ("before", "flaky", "after", "later") if sqlite_store.get_state(doc)}
    assert indexed == {"before", "flaky", "after", "later"}
    assert sqlite_store.get_state("bug") is None
    assert registry.get_sample_value(
        "policy_indexer_dead_letters_total", {"reason": "unexpected"}) == 1


def test_the_bound_is_validated() -> None:
    with pytest.raises(ValueError, match="max_attempts must be at least 1, got 0"):
        UnexpectedErrors(0)
