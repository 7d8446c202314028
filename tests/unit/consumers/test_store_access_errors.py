"""Credentials refused or TLS not verified while the worker runs.

No event is to blame for a ``StoreAccessError``: the worker must not dead-letter
every event it holds meanwhile (what an unknown exception would get), nor wait
in silence. It backs off with the line in its health (``/readyz`` says
``retrying`` with it) and goes on once the store lets it in again.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry
from support.waiting import wait_until

from chunker.model import Chunk
from consumers.commit_policy import CommitPolicy
from consumers.local_dead_letters import LocalDeadLetterSink
from consumers.retry import HealthState, RetryPolicy
from consumers.worker import Worker
from events.model import Action, ChangeEvent
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from store.errors import StoreAccessError
from store.memory import InMemoryStore
from transport.local_clients import LocalQueueConsumer, LocalQueuePublisher
from transport.local_queue import LocalQueue

TOPIC = "changes"
REFUSAL = ("Elasticsearch at https://es-1:9200 refused the credentials (401): check "
           "elasticsearch_username/password or elasticsearch_api_key")


class LockedOutStore(InMemoryStore):
    """Refuses every write with ``StoreAccessError`` while ``locked`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.locked = threading.Event()
        self.refusals = 0

    def write_chunks(self, chunks: Sequence[Chunk]) -> int:
        if self.locked.is_set():
            self.refusals += 1
            raise StoreAccessError(REFUSAL, status=401)
        return super().write_chunks(chunks)


def upsert(doc: str) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{doc}-1", document_id=doc, action=Action.UPSERT, version=1,
        changed_at=datetime(2024, 1, 1, tzinfo=UTC), content_type="text/markdown",
        content=f"# {doc}\n\nalpha {doc}",
    )


def test_the_worker_waits_with_the_reason_and_dead_letters_nothing(queue: LocalQueue) -> None:
    store = LockedOutStore()
    store.locked.set()
    LocalQueuePublisher(queue, TOPIC).publish_many([upsert("refunds"), upsert("exchanges")])
    health = HealthState()
    worker = Worker(
        LocalQueueConsumer(queue, TOPIC), Indexer(store), LocalDeadLetterSink(queue, TOPIC),
        metrics=WorkerMetrics.create(CollectorRegistry()), health=health,
        retry=RetryPolicy(initial_s=0.01, max_s=0.05, jitter_s=0.0),
        commit=CommitPolicy(max_records=10, max_interval_s=0.1), poll_timeout_s=0.05,
        unexpected_attempts=2,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        wait_until(lambda: store.refusals, 10, "the store to refuse several tries",
                   every_s=0.01, accept=lambda n: n >= 5)  # more than unexpected_attempts
        assert health.retrying, health
        assert health.last_error == f"StoreAccessError: {REFUSAL}"
        assert queue.dead_letters(TOPIC) == []
        assert queue.pending(TOPIC) == 2
        store.locked.clear()  # a privilege granted, a certificate fixed
        wait_until(lambda: queue.pending(TOPIC), 10, "the worker to index what it held",
                   every_s=0.01, accept=lambda n: n == 0)
    finally:
        worker.request_stop()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert {d for d in ("refunds", "exchanges") if store.get_state(d)} == {"refunds",
                                                                           "exchanges"}
    assert queue.dead_letters(TOPIC) == []
    assert not health.retrying
