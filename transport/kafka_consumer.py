"""``transport.consumer.EventConsumer`` on a Kafka consumer group (the worker's, in Kafka mode).

Commits are explicit (``enable_auto_commit=False``): the offset after the
highest delivery of each partition, bounded by ``commit_timeout_s`` so the
worker's loop keeps turning while Kafka is away. Kafka's errors become
``ConsumeError`` (``CommitLost`` when a rebalance took the partitions).

kafka-python (3.x) runs the rebalance listener on its IO thread, where a
blocking ``commit`` raises ``RuntimeError``; so a commit made by the revocation
callback is sent asynchronously and the listener (an async one) awaits its
outcome before the partitions move on. Such a commit that fails is logged,
not raised: the new owner redelivers those records, which is harmless.

While the brokers are away, kafka-python's ``poll`` does not raise: it returns
nothing and reconnects by itself. ``unreachable`` says so, from the group
heartbeat (``transport.kafka_reach.CoordinatorWatch``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import structlog
from kafka import AsyncConsumerRebalanceListener, KafkaConsumer, TopicPartition
from kafka.errors import CommitFailedError, KafkaError
from kafka.future import Future
from kafka.structs import OffsetAndMetadata

from transport.consumer import (
    CommitLost,
    ConsumeError,
    Delivery,
    Partition,
    Rebalance,
    ignore_rebalance,
    last_per_partition,
)
from transport.kafka import KafkaConnection, new_consumer
from transport.kafka_reach import CoordinatorWatch

log = structlog.get_logger(__name__)


def _tp(partition: Partition) -> TopicPartition:
    return TopicPartition(partition.topic, partition.number)


def _partitions(tps: Iterable[Any]) -> frozenset[Partition]:
    return frozenset(Partition(tp.topic, tp.partition) for tp in tps)


class KafkaEventConsumer:
    name = "kafka"

    def __init__(
        self, consumer: KafkaConsumer, topic: str, *,
        away_after_s: float = 10.0, commit_timeout_s: float = 5.0,
    ) -> None:
        self.consumer = consumer
        self.topic = topic
        self.commit_timeout_s = commit_timeout_s
        self.watch = CoordinatorWatch(consumer, away_after_s)
        self._in_listener = False
        self._listener_commits: list[Future] = []

    @classmethod
    def connect(
        cls, connection: KafkaConnection | str, group_id: str, topic: str, *,
        max_poll_records: int = 200, session_timeout_ms: int = 10000,
    ) -> KafkaEventConsumer:
        """A new member of ``group_id``; Kafka counts as away after one session timeout.

        ``KafkaConnectError`` (one line) when the consumer cannot be made.
        """
        consumer = new_consumer(
            connection, group_id, max_poll_records=max_poll_records,
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=max(500, session_timeout_ms // 5),
        )
        return cls(consumer, topic, away_after_s=session_timeout_ms / 1000)

    def subscribe(
        self, on_assign: Rebalance = ignore_rebalance, on_revoke: Rebalance = ignore_rebalance,
    ) -> None:
        self.consumer.subscribe([self.topic], listener=_Listener(self, on_assign, on_revoke))

    def poll(self, max_records: int, timeout_s: float) -> list[Delivery]:
        try:
            batch = self.consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=max_records)
        except KafkaError as exc:
            raise ConsumeError(f"poll {self.topic!r}: {exc!r}") from exc
        paused = self.consumer.paused()
        deliveries: list[Delivery] = []
        for tp, records in batch.items():
            if tp in paused:
                # Fetched before the pause took effect: give them back, none skipped.
                self.consumer.seek(tp, records[0].offset)
                continue
            deliveries.extend(
                Delivery(r.key, r.value, r.topic, r.partition, r.offset) for r in records
            )
        return deliveries

    def assignment(self) -> frozenset[Partition]:
        return _partitions(self.consumer.assignment())

    def pause(self, partitions: Iterable[Partition]) -> None:
        tps = [_tp(p) for p in partitions]
        if tps:
            self.consumer.pause(*tps)

    def resume(self, partitions: Iterable[Partition]) -> None:
        tps = [_tp(p) for p in partitions]
        if tps:
            self.consumer.resume(*tps)

    def commit(self, deliveries: Sequence[Delivery]) -> None:
        last = last_per_partition(deliveries)
        if not last:
            return
        offsets = {_tp(p): OffsetAndMetadata(d.offset + 1, "", -1) for p, d in last.items()}
        if self._in_listener:  # on kafka-python's IO thread: see the module docstring
            self._listener_commits.append(self.consumer.commit_async(offsets))
            return
        try:
            self.consumer.commit(offsets=offsets, timeout_ms=int(self.commit_timeout_s * 1000))
        except CommitFailedError as exc:
            raise CommitLost(f"commit {self.topic!r} refused after a rebalance: {exc}") from exc
        except KafkaError as exc:
            raise ConsumeError(f"commit {self.topic!r}: {exc!r}") from exc

    def backlog(self, delivery: Delivery) -> int | None:
        highwater = self.consumer.highwater(TopicPartition(delivery.topic, delivery.partition))
        return None if highwater is None else max(0, highwater - delivery.offset - 1)

    def unreachable(self) -> str | None:
        return self.watch.away()

    def close(self) -> None:
        self.consumer.close(autocommit=False)


class _Listener(AsyncConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, owner: KafkaEventConsumer, on_assign: Rebalance,
                 on_revoke: Rebalance) -> None:
        self.owner = owner
        self.on_assign = on_assign
        self.on_revoke = on_revoke

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._call(self.on_revoke, _partitions(revoked))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self._call(self.on_assign, _partitions(assigned))

    async def _call(self, callback: Rebalance, partitions: frozenset[Partition]) -> None:
        owner = self.owner
        owner._in_listener = True
        try:
            callback(partitions)
        finally:
            owner._in_listener = False
        commits, owner._listener_commits = owner._listener_commits, []
        for future in commits:
            try:
                await future
            except KafkaError as exc:
                log.warning("commit during a rebalance failed; the new owner redoes it",
                            topic=owner.topic, error=repr(exc))
