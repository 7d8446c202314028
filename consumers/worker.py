"""The worker: one loop over any ``transport.consumer.EventConsumer`` (Kafka or the local queue).

One loop, small steps, in the manner of arroyo's ``StreamProcessor``: ``_poll`` ->
``_process`` the polled batch through the ``indexing.Indexer`` (retrying
transient failures, dead-lettering poison, and any other exception of a record
after a bounded number of tries) -> ``_record_done`` (the offsets
become committable) -> ``_commit`` on the ``CommitPolicy``, when the transport
is idle, on revocation and on shutdown. ``request_stop`` (SIGTERM) lets the
batch in hand finish, commits and returns; a worker backing off from a
transient failure stops waiting at once and commits only what is done.

While it backs off, the worker keeps polling with every assigned partition
paused (a partition assigned meanwhile is paused on arrival), so it stays in
its consumer group however long Elasticsearch is away; a batch whose every
partition was revoked meanwhile belongs to the new owner and is dropped
(``PartitionLost``), uncommitted.

While the transport is away (``EventConsumer.unreachable``: Kafka's group
coordinator silent), ``poll`` just returns nothing; the worker says so on
/healthz and in ``policy_indexer_retrying``. A commit that fails meanwhile is
retried on a later turn (the consumer bounds its time, so the loop keeps
turning and SIGTERM stays prompt); the offsets stay pending.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import structlog

from consumers.commit_policy import CommitPolicy
from consumers.dead_letter import DeadLetterSink
from consumers.errors import Interrupted, TransientError
from consumers.handling import OutcomeCounter, UnexpectedErrors
from consumers.retry import HealthState, RetryPolicy, call_with_retry
from consumers.visibility import VisibilityPolicy
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from store.errors import StoreAccessError, StoreError
from transport.consumer import (
    CommitLost,
    ConsumeError,
    Delivery,
    EventConsumer,
    Partition,
    last_per_partition,
)

log = structlog.get_logger(__name__)


class PartitionLost(Exception):
    """Every partition of the batch in hand was revoked while we waited."""


class Worker:
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
        visibility: VisibilityPolicy | None = None,
        max_records: int = 200,
        poll_timeout_s: float = 0.5,
        write_behind: bool = False,
        checkpoint: Callable[[str], None] = lambda _step: None,
        unexpected_attempts: int = 3,
    ) -> None:
        if max_records < 1:
            raise ValueError(f"max_records must be at least 1, got {max_records!r}")
        self.consumer = consumer
        self.processor = processor
        self.dead_letters = dead_letters
        self.metrics = metrics
        self.health = health or HealthState()
        self.retry = retry or RetryPolicy()
        self.commit_policy = commit or CommitPolicy()
        self.visibility = visibility or VisibilityPolicy()
        self.max_records = max_records
        self.poll_timeout_s = poll_timeout_s
        # With write_behind, one thread writes chunks while the loop chunks the rest of
        # the batch (for a store that may be written from another thread).
        self._writer = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="chunk-writer")
            if write_behind else None
        )
        self.checkpoint = checkpoint
        # An exception neither poison nor transient: a dead letter after this many tries.
        self._unexpected = UnexpectedErrors(unexpected_attempts)
        self._stop = threading.Event()
        self._pending: dict[Partition, Delivery] = {}  # the last done delivery of each
        self._assigned: set[Partition] = set()
        self._backing_off = False

    # -- control -----------------------------------------------------------
    def request_stop(self) -> None:
        self.health.stopping = True
        self._stop.set()

    def run(self) -> None:
        self.consumer.subscribe(on_assign=self._on_assign, on_revoke=self._on_revoke)
        try:
            while not self._stop.is_set():
                # A partition revoked while we were busy belongs to its new owner.
                batch = [d for d in self._poll(self.poll_timeout_s) if d.source in self._assigned]
                if batch:
                    try:
                        self._process(batch)
                    except PartitionLost:
                        continue
                    self._record_done(batch)
                    self._make_visible(len(batch))
                if not batch or self.commit_policy.should_commit():
                    self._commit()
        except Interrupted:
            log.info("stopping while backing off; the events in hand stay uncommitted")
        finally:
            self._commit()
            if self._writer is not None:
                self._writer.shutdown(wait=True)
            self.consumer.close()
            log.info("worker stopped")

    # -- steps -------------------------------------------------------------
    def _poll(self, timeout_s: float) -> list[Delivery]:
        self.metrics.beat()
        self.health.heartbeat = time.monotonic()  # liveness: the loop turns (backoff too)
        try:
            batch = self.consumer.poll(self.max_records, timeout_s)
        except ConsumeError as exc:
            self.metrics.transient_errors.labels(operation=self.consumer.name).inc()
            log.warning("poll failed", transport=self.consumer.name, error=str(exc))
            self._stop.wait(1.0)
            batch = []
        self._watch_reach()
        return batch

    def _watch_reach(self) -> None:
        away = self.consumer.unreachable()
        if away and not self.health.kafka_unreachable:
            self.metrics.transient_errors.labels(operation=self.consumer.name).inc()
            log.warning("transport out of reach; waiting for it", reason=away)
        elif not away and self.health.kafka_unreachable:
            log.info("transport within reach again", transport=self.consumer.name)
        self.health.kafka_unreachable = away
        self.metrics.retrying.set(1 if away or self.health.retrying else 0)

    def _process(self, batch: list[Delivery]) -> None:
        partitions = {d.source for d in batch}

        def on_retry(exc: BaseException) -> None:
            self.metrics.retrying.set(1)
            operation = self.consumer.name if isinstance(exc, TransientError) else "store"
            self.metrics.transient_errors.labels(operation=operation).inc()

        counter = OutcomeCounter(self.metrics)
        try:
            handled = call_with_retry(
                lambda: self._unexpected.attempt(batch, self.processor, self.dead_letters,
                                                 write_behind=self._writer),
                policy=self.retry, health=self.health,
                sleep=lambda s: self._wait(s, partitions), on_retry=on_retry,
            )
        finally:
            self.metrics.retrying.set(1 if self.health.kafka_unreachable else 0)
        counter.count(handled)
        for partition, last in last_per_partition(batch).items():
            backlog = self.consumer.backlog(last)
            if backlog is not None:
                self.metrics.consumer_lag.labels(
                    topic=partition.topic, partition=str(partition.number)
                ).set(backlog)

    def _wait(self, seconds: float, partitions: set[Partition]) -> None:
        """Back off without leaving the group: poll with every partition paused."""
        deadline = time.monotonic() + seconds
        self._backing_off = True
        try:
            while True:
                if self._stop.is_set():
                    raise Interrupted("stop requested")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.consumer.pause(self.consumer.assignment())
                got = self._poll(min(remaining, 0.5))
                if got:  # the consumer broke its contract: crash, so redelivery fills the gap
                    raise RuntimeError(
                        f"{self.consumer.name} handed out {len(got)} records of paused "
                        f"partitions ({', '.join(sorted({str(d.source) for d in got}))})"
                    )
        finally:
            self._backing_off = False
            self.consumer.resume(self.consumer.assignment())
        if not partitions & self._assigned:
            raise PartitionLost(", ".join(sorted(str(p) for p in partitions)))

    def _make_visible(self, batch_size: int) -> None:
        """Caught up: make the batch searchable now (``consumers.visibility``). A failed
        refresh loses nothing (the index refreshes on its own); it is logged and counted."""
        if not self.visibility.due(batch_size, self.max_records):
            return
        self.visibility.refreshed()
        try:
            self.processor.store.refresh()
        except StoreAccessError as exc:
            self.visibility.disable()
            log.warning("no right to refresh the index; new chunks become searchable at "
                        "its own refresh", error=str(exc))
        except StoreError as exc:
            self.metrics.transient_errors.labels(operation="refresh").inc()
            log.warning("refresh after a batch failed; the index refreshes on its own",
                        error=str(exc))

    def _record_done(self, batch: list[Delivery]) -> None:
        for partition, last in last_per_partition(batch).items():
            if partition in self._assigned:
                self._pending[partition] = last
        self.commit_policy.record_done(len(batch))

    def _commit(self) -> None:
        if not self._pending:
            self.commit_policy.committed()
            return
        try:
            self.consumer.commit(list(self._pending.values()))
        except CommitLost as exc:
            log.warning("commit refused after a rebalance; the new owner redoes it", error=str(exc))
            self._pending.clear()
            self.commit_policy.committed()
            return
        except ConsumeError as exc:
            # Not committing only means redelivery, which is harmless.
            self.metrics.transient_errors.labels(operation=self.consumer.name).inc()
            log.warning("commit failed; will try again", error=str(exc))
            return
        self.checkpoint("after-commit")
        self.metrics.offsets_committed.inc()
        self._pending.clear()
        self.commit_policy.committed()

    # -- rebalance callbacks (run inside ``poll``) ---------------------------
    def _on_revoke(self, revoked: frozenset[Partition]) -> None:
        self._commit()
        self._assigned -= revoked
        for partition in revoked:
            self._pending.pop(partition, None)
            with contextlib.suppress(KeyError):  # the new owner reports its lag now
                self.metrics.consumer_lag.remove(partition.topic, str(partition.number))

    def _on_assign(self, assigned: frozenset[Partition]) -> None:
        self._assigned |= assigned
        if self._backing_off:
            self.consumer.pause(assigned)
