"""The embedded mode's parts, opened from settings: the SQLite store, the local queue, a worker.

Two files under ``settings.embedded_dir``: ``index.sqlite3`` (chunks, document
states, the FTS5 index) and ``queue.sqlite3`` (the change queue and its dead
letters). Two files rather than one so that publishing never waits for a long
chunk write, and the index can be deleted and rebuilt without losing queued
changes. The queue's topic is ``settings.kafka_topic``, the same name as in
Kafka mode.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from consumers.local_dead_letters import LocalDeadLetterSink
from consumers.queue_worker import QueueWorker
from consumers.retry import HealthState
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from policy_indexer.settings import Settings
from store.sqlite import SQLiteStore
from transport.local_clients import LocalQueueConsumer, LocalQueuePublisher
from transport.local_queue import LocalQueue

INDEX_FILE = "index.sqlite3"
QUEUE_FILE = "queue.sqlite3"


def index_path(settings: Settings) -> Path:
    return settings.embedded_dir / INDEX_FILE


def queue_path(settings: Settings) -> Path:
    return settings.embedded_dir / QUEUE_FILE


@dataclass
class Embedded:
    settings: Settings
    store: SQLiteStore
    queue: LocalQueue
    _closed: bool = field(default=False, init=False)

    @classmethod
    def open(cls, settings: Settings) -> Embedded:
        """Open (creating them if needed) the two files; raises StoreError / QueueError."""
        store = SQLiteStore(index_path(settings))
        try:
            store.ensure_ready()
            queue = LocalQueue(queue_path(settings))
        except BaseException:
            store.close()
            raise
        return cls(settings, store, queue)

    @property
    def topic(self) -> str:
        return self.settings.kafka_topic

    def publisher(self) -> LocalQueuePublisher:
        return LocalQueuePublisher(self.queue, self.topic)

    def worker(
        self,
        metrics: WorkerMetrics,
        *,
        health: HealthState | None = None,
        checkpoint: Callable[[str], None] = lambda _step: None,
    ) -> QueueWorker:
        """A worker on the queue; raises ``ConsumerBusy`` if another process consumes it."""
        s = self.settings
        consumer = LocalQueueConsumer(self.queue, self.topic, lease_ttl_s=s.embedded_lease_seconds)
        processor = Indexer(
            self.store, checkpoint=checkpoint, on_unchanged=metrics.unchanged_content.inc
        )
        return QueueWorker(
            consumer,
            processor,
            LocalDeadLetterSink(self.queue, self.topic),
            metrics=metrics,
            health=health,
            retry=s.retry_policy(),
            commit=s.commit_policy(),
            max_records=s.commit_every_records,
            checkpoint=checkpoint,
        )

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.queue.close()
            self.store.close()


class WorkerThread:
    """A worker run in a thread; keeps the exception that ended it, if any."""

    def __init__(self, worker: QueueWorker) -> None:
        self.worker = worker
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="embedded-worker", daemon=True)

    def _run(self) -> None:
        try:
            self.worker.run()
        except BaseException as exc:  # handed to the caller, which decides
            self.error = exc

    def start(self) -> WorkerThread:
        self._thread.start()
        return self

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 60.0) -> None:
        self.worker.request_stop()
        self._thread.join(timeout_s)
