"""Kafka helpers for the webhook tests: a topic that takes 11 MB records, and reading it whole."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from events.model import ChangeEvent
from support.waiting import wait_until
from transport.kafka import KAFKA_MAX_MESSAGE_BYTES

# Kafka's default max.message.bytes (~1 MB) would refuse the 5 MB document.
MAX_MESSAGE_BYTES = KAFKA_MAX_MESSAGE_BYTES


@contextmanager
def temporary_topic(bootstrap: str, name: str, partitions: int = 3) -> Iterator[str]:
    _admin(bootstrap, lambda admin: admin.create_topics([NewTopic(
        name, num_partitions=partitions, replication_factor=1,
        topic_configs={"max.message.bytes": str(MAX_MESSAGE_BYTES)},
    )]))
    try:
        yield name
    finally:
        # A fresh client: the broker may have restarted since (the outage test).
        _admin(bootstrap, lambda admin: admin.delete_topics([name]))


def _admin(bootstrap: str, action: Callable[[KafkaAdminClient], object]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        action(admin)
    finally:
        admin.close()


def read_topic(bootstrap: str, topic: str) -> list[tuple[bytes, ChangeEvent]]:
    """Every record now in ``topic`` as (key, event): reads up to the end offsets, no waiting."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False,
        max_partition_fetch_bytes=MAX_MESSAGE_BYTES, fetch_max_bytes=4 * MAX_MESSAGE_BYTES,
    )
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = consumer.end_offsets(partitions)
        records: list[tuple[bytes, ChangeEvent]] = []

        def left_to_read() -> dict[int, int]:
            """Records still to read by partition (before this call's poll, if any)."""
            left = {tp.partition: ends[tp] - consumer.position(tp) for tp in partitions
                    if consumer.position(tp) < ends[tp]}
            if left:
                for batch in consumer.poll(timeout_ms=1000).values():
                    records.extend((r.key, ChangeEvent.from_json_bytes(r.value)) for r in batch)
            return left

        wait_until(left_to_read, 60, f"{topic} read up to its end offsets {ends}",
                   accept=lambda left: not left)
        return records
    finally:
        consumer.close()
