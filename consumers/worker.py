"""The Kafka worker: poll, process the batch, commit what is done.

One loop, small steps: ``poll`` -> ``_process`` the polled batch through
the ``indexing.Indexer`` (retrying transient failures, dead-lettering poison) -> mark
the offsets committable -> commit on the
``CommitPolicy``, on revocation and on shutdown. ``request_stop`` (SIGTERM)
lets the batch in hand finish, commits and returns; a worker backing off from
a transient failure stops waiting at once and commits only what is done.

While it backs off, the worker keeps polling with every partition paused, so it
stays in its consumer group however long Elasticsearch is away.

While Kafka is away, ``poll`` just returns nothing and kafka-python reconnects
by itself; the worker notices through its group heartbeat (``CoordinatorWatch``)
and says so on /healthz and in ``policy_indexer_retrying``. A commit that fails
meanwhile is retried on a later turn (bounded by ``commit_timeout_ms``, so the
loop keeps turning and SIGTERM stays prompt); the offsets stay pending.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog
from kafka import ConsumerRebalanceListener, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import CommitFailedError, KafkaError
from kafka.structs import OffsetAndMetadata

from consumers.commit_policy import CommitPolicy
from consumers.dead_letter import DeadLetter, DeadLetterSink
from consumers.errors import Interrupted, TransientError
from consumers.handling import OutcomeCounter, attempt
from consumers.kafka_reach import CoordinatorWatch
from consumers.retry import HealthState, RetryPolicy, call_with_retry
from consumers.transport import publish
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics

log = structlog.get_logger(__name__)


class PartitionLost(Exception):
    """Every partition of the batch in hand was revoked while we waited."""


class KafkaDeadLetterSink:
    def __init__(self, producer: KafkaProducer, topic: str) -> None:
        self.producer = producer
        self.topic = topic

    def send(self, letter: DeadLetter) -> None:
        # Kafka allows a record with neither key nor value; kafka-python refuses to
        # send one, so such a poison record is dead-lettered with an empty value.
        value = letter.value if letter.value is not None or letter.key is not None else b""
        publish(self.producer, self.topic, key=letter.key, value=value,
                headers=letter.headers())


class KafkaWorker:
    def __init__(
        self,
        consumer: KafkaConsumer,
        topic: str,
        processor: Indexer,
        dead_letters: DeadLetterSink,
        *,
        metrics: WorkerMetrics,
        health: HealthState | None = None,
        retry: RetryPolicy | None = None,
        commit: CommitPolicy | None = None,
        poll_timeout_ms: int = 500,
        commit_timeout_ms: int = 5000,
        kafka_away_after_s: float = 10.0,
        checkpoint: Callable[[str], None] = lambda _step: None,
    ) -> None:
        self.consumer = consumer
        self.topic = topic
        self.processor = processor
        # one thread writes chunks while the loop chunks the rest of the batch
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chunk-writer")
        self.dead_letters = dead_letters
        self.metrics = metrics
        self.health = health or HealthState()
        self.retry = retry or RetryPolicy()
        self.commit_policy = commit or CommitPolicy()
        self.poll_timeout_ms = poll_timeout_ms
        self.commit_timeout_ms = commit_timeout_ms
        self.kafka_reach = CoordinatorWatch(consumer, kafka_away_after_s)
        self.checkpoint = checkpoint
        self._stop = threading.Event()
        self._pending: dict[TopicPartition, int] = {}
        self._assigned: set[TopicPartition] = set()

    # -- control -----------------------------------------------------------
    def request_stop(self) -> None:
        self.health.stopping = True
        self._stop.set()

    def run(self) -> None:
        self.consumer.subscribe([self.topic], listener=_Listener(self))
        try:
            while not self._stop.is_set():
                polled = self._poll(self.poll_timeout_ms)
                # A partition revoked while we were busy belongs to its new owner.
                records = [r for tp, rs in polled.items() if tp in self._assigned for r in rs]
                if records:
                    try:
                        self._process(records)
                    except PartitionLost:
                        continue
                    for record in records:
                        tp = TopicPartition(record.topic, record.partition)
                        if tp in self._assigned:
                            self._pending[tp] = record.offset + 1
                    self.commit_policy.record_done(len(records))
                if self.commit_policy.should_commit():
                    self._commit()
        except Interrupted:
            log.info("stopping while backing off; the events in hand stay uncommitted")
        finally:
            self._commit()
            self._writer.shutdown(wait=True)
            self.consumer.close(autocommit=False)
            log.info("worker stopped")

    # -- steps -------------------------------------------------------------
    def _poll(self, timeout_ms: int) -> dict[TopicPartition, list[Any]]:
        self.metrics.beat()
        try:
            result: dict[TopicPartition, list[Any]] = self.consumer.poll(timeout_ms=timeout_ms)
        except KafkaError as exc:
            self.metrics.transient_errors.labels(operation="kafka").inc()
            log.warning("poll failed", error=repr(exc))
            time.sleep(1.0)
            result = {}
        self._watch_kafka()
        return result

    def _watch_kafka(self) -> None:
        away = self.kafka_reach.away()
        if away and not self.health.kafka_unreachable:
            self.metrics.transient_errors.labels(operation="kafka").inc()
            log.warning("Kafka out of reach; waiting for it", reason=away)
        elif not away and self.health.kafka_unreachable:
            log.info("Kafka within reach again")
        self.health.kafka_unreachable = away
        self.metrics.retrying.set(1 if away or self.health.retrying else 0)

    def _process(self, records: list[Any]) -> None:
        partitions = {TopicPartition(r.topic, r.partition) for r in records}

        def on_retry(exc: BaseException) -> None:
            self.metrics.retrying.set(1)
            operation = "kafka" if isinstance(exc, TransientError) else "store"
            self.metrics.transient_errors.labels(operation=operation).inc()

        counter = OutcomeCounter(self.metrics)
        try:
            handled = call_with_retry(
                lambda: attempt(records, self.processor, self.dead_letters,
                                write_behind=self._writer),
                policy=self.retry, health=self.health,
                sleep=lambda s: self._wait(s, partitions), on_retry=on_retry,
            )
        finally:
            self.metrics.retrying.set(1 if self.health.kafka_unreachable else 0)
        counter.count(handled)
        last: dict[TopicPartition, int] = {}
        for record in records:
            last[TopicPartition(record.topic, record.partition)] = record.offset
        for tp, offset in last.items():
            highwater = self.consumer.highwater(tp)
            if highwater is not None:
                self.metrics.consumer_lag.labels(topic=tp.topic, partition=str(tp.partition)).set(
                    max(0, highwater - offset - 1)
                )

    def _wait(self, seconds: float, partitions: set[TopicPartition]) -> None:
        """Back off without leaving the group: poll with every partition paused."""
        deadline = time.monotonic() + seconds
        while True:
            if self._stop.is_set():
                raise Interrupted("stop requested")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self.consumer.pause(*self.consumer.assignment())
            got = self._poll(int(min(remaining, 0.5) * 1000))
            for other, records in got.items():
                # A partition assigned during the wait is not paused yet: give
                # its records back so none is skipped.
                self.consumer.seek(other, records[0].offset)
                self.consumer.pause(other)
        self.consumer.resume(*self.consumer.paused())
        if not partitions & self._assigned:
            raise PartitionLost(", ".join(sorted(str(tp) for tp in partitions)))

    def _commit(self) -> None:
        if not self._pending:
            self.commit_policy.committed()
            return
        offsets = {tp: OffsetAndMetadata(off, "", -1) for tp, off in self._pending.items()}
        try:
            self.consumer.commit(offsets=offsets, timeout_ms=self.commit_timeout_ms)
        except CommitFailedError as exc:
            log.warning("commit refused after a rebalance; the new owner redoes it", error=str(exc))
        except KafkaError as exc:
            # Not committing only means redelivery, which is harmless.
            self.metrics.transient_errors.labels(operation="kafka").inc()
            log.warning("commit failed; will try again", error=repr(exc))
            return
        self.checkpoint("after-commit")
        self.metrics.offsets_committed.inc()
        self._pending.clear()
        self.commit_policy.committed()

    def _revoked(self, revoked: set[TopicPartition]) -> None:
        self._commit()
        self._assigned -= set(revoked)
        for tp in revoked:
            self._pending.pop(tp, None)
            with contextlib.suppress(KeyError):  # the new owner reports its lag now
                self.metrics.consumer_lag.remove(tp.topic, str(tp.partition))

    def _assigned_now(self, assigned: set[TopicPartition]) -> None:
        self._assigned |= set(assigned)


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, worker: KafkaWorker) -> None:
        self.worker = worker

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.worker._revoked(set(revoked))

    def on_partitions_assigned(self, assigned: Any) -> None:
        self.worker._assigned_now(set(assigned))
