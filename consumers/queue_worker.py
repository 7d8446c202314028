"""The worker loop over any ``transport.consumer.EventConsumer`` (the embedded mode's).

Same steps and guarantees as ``consumers.worker.KafkaWorker``: poll -> handle the
polled batch with the same ``indexing.Indexer`` (retrying transient failures,
dead-lettering poison) -> commit what is done, on the ``CommitPolicy``, when the
transport is idle and on shutdown. Rebalances do not exist here (the local queue
has one consumer), which is why this loop is small; the Kafka worker keeps its
own loop for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from consumers.commit_policy import CommitPolicy
from consumers.dead_letter import DeadLetterSink
from consumers.errors import Interrupted, TransientError
from consumers.handling import OutcomeCounter, attempt
from consumers.retry import HealthState, RetryPolicy, call_with_retry
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from transport.consumer import ConsumeError, Delivery, EventConsumer

log = structlog.get_logger(__name__)


class QueueWorker:
    def __init__(
        self,
        consumer: EventConsumer,
        processor: Indexer,
        dead_letters: DeadLetterSink,
        *,
        metrics: WorkerMetrics,
        health: HealthState | None = None,
        retry: RetryPolicy | None = None,
        commit: CommitPolicy | None = None,
        max_records: int = 200,
        poll_timeout_s: float = 0.5,
        checkpoint: Callable[[str], None] = lambda _step: None,
        on_done: Callable[[int], None] = lambda _n: None,
    ) -> None:
        self.consumer = consumer
        self.processor = processor
        self.dead_letters = dead_letters
        self.metrics = metrics
        self.health = health or HealthState()
        self.retry = retry or RetryPolicy()
        self.commit_policy = commit or CommitPolicy()
        self.max_records = max_records
        self.poll_timeout_s = poll_timeout_s
        self.checkpoint = checkpoint
        self.on_done = on_done  # called with how many events a commit covered
        self._stop = threading.Event()
        self._done: list[Delivery] = []

    def request_stop(self) -> None:
        self.health.stopping = True
        self._stop.set()

    def run(self) -> None:
        try:
            while not self._stop.is_set():
                batch = self._poll()
                if batch:
                    self._process(batch)
                    self._done.extend(batch)
                    self.commit_policy.record_done(len(batch))
                if not batch or self.commit_policy.should_commit():
                    self._commit()
        except Interrupted:
            log.info("stopping while backing off; the events in hand stay uncommitted")
        finally:
            self._commit()
            self.consumer.close()
            log.info("worker stopped")

    def _poll(self) -> list[Delivery]:
        self.metrics.beat()
        try:
            return self.consumer.poll(self.max_records, self.poll_timeout_s)
        except ConsumeError as exc:
            self.metrics.transient_errors.labels(operation="queue").inc()
            log.warning("poll failed", error=str(exc))
            self._stop.wait(1.0)
            return []

    def _process(self, batch: list[Delivery]) -> None:

        def on_retry(exc: BaseException) -> None:
            self.metrics.retrying.set(1)
            operation = "queue" if isinstance(exc, TransientError) else "store"
            self.metrics.transient_errors.labels(operation=operation).inc()

        def sleep(seconds: float) -> None:
            if self._stop.wait(seconds):
                raise Interrupted("stop requested")

        counter = OutcomeCounter(self.metrics)
        try:
            handled = call_with_retry(
                lambda: attempt(batch, self.processor, self.dead_letters),
                policy=self.retry, health=self.health,
                sleep=sleep, on_retry=on_retry,
            )
        finally:
            self.metrics.retrying.set(0)
        counter.count(handled)

    def _commit(self) -> None:
        if not self._done:
            self.commit_policy.committed()
            return
        try:
            self.consumer.commit(self._done)
        except ConsumeError as exc:
            log.warning("commit failed; will try again", error=str(exc))  # only redelivery
            return
        self.checkpoint("after-commit")
        self.metrics.offsets_committed.inc()
        self.on_done(len(self._done))
        self._done = []
        self.commit_policy.committed()
