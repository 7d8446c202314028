"""Kafka helpers shared by the worker and ``policy-indexer replay`` (kafka-python 3.x).

Keys are document ids, so every change of one document lands on one partition,
in order. Kafka errors are translated to ``consumers.errors.TransientError``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaError, TopicAlreadyExistsError

from consumers.errors import TransientError
from transport.kafka_producer import KAFKA_MAX_MESSAGE_BYTES

Headers = list[tuple[str, bytes]]


def make_producer(bootstrap: str, **overrides: Any) -> KafkaProducer:
    options: dict[str, Any] = {
        "bootstrap_servers": bootstrap.split(","),
        "acks": "all",
        # Idempotent: a retried send is never written twice, and per-key order holds.
        "enable_idempotence": True,
        "linger_ms": 5,
        "max_in_flight_requests_per_connection": 1,
        "request_timeout_ms": 15000,
        "max_request_size": KAFKA_MAX_MESSAGE_BYTES,
    }
    options.update(overrides)
    return KafkaProducer(**options)


def make_consumer(bootstrap: str, group_id: str, **overrides: Any) -> KafkaConsumer:
    options: dict[str, Any] = {
        "bootstrap_servers": bootstrap.split(","),
        "group_id": group_id,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "max_poll_records": 200,
        "session_timeout_ms": 10000,
        "heartbeat_interval_ms": 2000,
        "max_poll_interval_ms": 300000,
        "max_partition_fetch_bytes": KAFKA_MAX_MESSAGE_BYTES,
        "fetch_max_bytes": 4 * KAFKA_MAX_MESSAGE_BYTES,
    }
    options.update(overrides)
    return KafkaConsumer(**options)


def publish(
    producer: KafkaProducer,
    topic: str,
    *,
    key: bytes | None,
    value: bytes | None,
    headers: Headers | None = None,
    wait_s: float | None = 30.0,
) -> Any:
    """Send one record; with ``wait_s`` wait for the broker's acknowledgement."""
    try:
        future = producer.send(topic, key=key, value=value, headers=headers or [])
        return future.get(timeout=wait_s) if wait_s is not None else future
    except KafkaError as exc:
        raise TransientError(f"publish to {topic!r} failed: {exc!r}") from exc


def ensure_topics(bootstrap: str, topics: Sequence[str], partitions: int = 3) -> None:
    """Create the topics if missing, sized for the largest change event.

    A topic that already exists keeps its configuration: check its
    ``max.message.bytes`` (docs/indexing.md).
    """
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
    try:
        for topic in topics:
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics(
                    [
                        NewTopic(
                            name=topic,
                            num_partitions=partitions,
                            replication_factor=1,
                            topic_configs={"max.message.bytes": str(KAFKA_MAX_MESSAGE_BYTES)},
                        )
                    ]
                )
    finally:
        admin.close()
