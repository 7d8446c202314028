"""``transport.consumer.EventConsumer`` on a Kafka consumer group.

Commits are explicit (``enable_auto_commit=False``): the offset after the
highest delivery of each partition. Kafka errors become ``ConsumeError``.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError
from kafka.structs import OffsetAndMetadata

from transport.consumer import ConsumeError, Delivery


class KafkaEventConsumer:
    def __init__(self, consumer: KafkaConsumer, topic: str) -> None:
        self.consumer = consumer
        self.topic = topic
        consumer.subscribe([topic])

    def poll(self, max_records: int, timeout_s: float) -> list[Delivery]:
        try:
            batch = self.consumer.poll(timeout_ms=int(timeout_s * 1000), max_records=max_records)
        except KafkaError as exc:
            raise ConsumeError(f"poll {self.topic!r}: {exc!r}") from exc
        return [
            Delivery(r.key, r.value, r.topic, r.partition, r.offset)
            for records in batch.values()
            for r in records
        ]

    def commit(self, deliveries: Sequence[Delivery]) -> None:
        ends: dict[TopicPartition, int] = {}
        for d in deliveries:
            tp = TopicPartition(d.topic, d.partition)
            ends[tp] = max(ends.get(tp, -1), d.offset + 1)
        if not ends:
            return
        try:
            self.consumer.commit(
                offsets={tp: OffsetAndMetadata(off, "", -1) for tp, off in ends.items()}
            )
        except KafkaError as exc:
            raise ConsumeError(f"commit {self.topic!r}: {exc!r}") from exc

    def close(self) -> None:
        self.consumer.close(autocommit=False)
