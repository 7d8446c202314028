"""The local Kafka broker is real: produce, consume in a group, commit, resume after a restart."""

from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

pytestmark = pytest.mark.services


def _consumer(bootstrap: str, topic: str, group: str) -> KafkaConsumer:
    return KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=8000,
    )


def _take(consumer: KafkaConsumer, count: int) -> list[bytes]:
    values: list[bytes] = []
    for message in consumer:
        values.append(message.value)
        if len(values) == count:
            break
    return values


def test_group_commits_and_a_restarted_consumer_resumes_after_the_commit(
    kafka_bootstrap: str, unique: str
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    admin.create_topics([NewTopic(unique, num_partitions=1, replication_factor=1)])
    try:
        producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
        for i in range(10):
            producer.send(unique, key=b"doc", value=f"event-{i}".encode()).get(timeout=30)
        producer.close()

        first = _consumer(kafka_bootstrap, unique, f"{unique}-group")
        assert _take(first, 4) == [f"event-{i}".encode() for i in range(4)]
        first.commit()
        # Read two more without committing: a restart must deliver them again.
        assert _take(first, 2) == [b"event-4", b"event-5"]
        first.close(autocommit=False)

        second = _consumer(kafka_bootstrap, unique, f"{unique}-group")
        assert _take(second, 6) == [f"event-{i}".encode() for i in range(4, 10)]
        assert second.committed(TopicPartition(unique, 0)) == 4
        second.close(autocommit=False)
    finally:
        admin.delete_topics([unique])
        admin.close()
