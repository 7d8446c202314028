"""The one Kafka module: how this system produces, consumes and creates topics (kafka-python 3.x).

Every producer of the system (the webhook's publisher, the worker's dead-letter
sink, ``policy-indexer replay --to kafka``) is built by ``new_producer`` from one
``ProducerPolicy``: acks=all, idempotent (a retried send is never written twice,
and kafka-python then keeps per-partition order by itself), and a bounded
delivery timeout, so a send that failed has been given up by the producer and
will not appear later on its own. ``send`` waits for the broker's verdict and
translates Kafka's errors to the transport's own (``transport.publisher``)::

    PublishError
    ├── PublishUnavailable   no acknowledgement in time, or a retriable refusal
    └── PublishRejected      the broker will not store it (e.g. too large)

``new_consumer`` is the worker's consumer group member (explicit commits, sized
for the largest event) and ``ensure_topics`` the one admin call (topic creation,
partitions from settings). Keys are document ids, so every change of one
document lands on one partition, in order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaError, KafkaTimeoutError, TopicAlreadyExistsError

from transport.publisher import PublishRejected, PublishUnavailable

# The largest change event a topic must hold: a 10 MiB webhook body plus the event's
# own fields. Kafka's default (~1 MiB) would refuse every large policy document.
KAFKA_MAX_MESSAGE_BYTES = 11 * 1024 * 1024
# How much longer than the producer's own delivery timeout we wait for its verdict.
VERDICT_GRACE_SECONDS = 2.0

Headers = list[tuple[str, bytes]]


def broker_list(bootstrap_servers: str) -> list[str]:
    """``"a:9092, b:9092"`` as a list; a value naming no broker is refused by name."""
    servers = [s.strip() for s in bootstrap_servers.split(",") if s.strip()]
    if not servers:
        raise ValueError(f"bootstrap_servers={bootstrap_servers!r} names no broker")
    return servers


@dataclass(frozen=True)
class ProducerPolicy:
    """The one producer configuration; only the time bound and the size vary by use."""

    timeout_seconds: float = 15.0  # delivery, request, metadata and bootstrap bound
    max_message_bytes: int = KAFKA_MAX_MESSAGE_BYTES
    client_id: str = "policy-indexer"

    def __post_init__(self) -> None:
        if self.timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be positive, got {self.timeout_seconds!r}")
        if self.max_message_bytes < 1:
            raise ValueError(f"max_message_bytes must be positive, got {self.max_message_bytes!r}")

    @property
    def verdict_timeout_seconds(self) -> float:
        """How long ``send`` waits: past the producer's own delivery timeout."""
        return self.timeout_seconds + VERDICT_GRACE_SECONDS

    def options(self, bootstrap_servers: str) -> dict[str, Any]:
        timeout_ms = max(1, int(self.timeout_seconds * 1000))
        return {
            "bootstrap_servers": broker_list(bootstrap_servers),
            "client_id": self.client_id,
            "acks": "all",
            "enable_idempotence": True,
            "linger_ms": 0,
            "request_timeout_ms": timeout_ms,
            "delivery_timeout_ms": timeout_ms,
            "max_block_ms": timeout_ms,
            "bootstrap_timeout_ms": timeout_ms,
            "max_request_size": self.max_message_bytes,
            "reconnect_backoff_max_ms": 1000,
        }


def new_producer(bootstrap_servers: str, policy: ProducerPolicy | None = None) -> KafkaProducer:
    """A producer on the one policy; Kafka's errors while connecting become ``PublishError``."""
    policy = policy or ProducerPolicy()
    try:
        return KafkaProducer(**policy.options(bootstrap_servers))
    except KafkaError as exc:
        raise translate(exc, f"Kafka at {bootstrap_servers}", policy) from exc


def send(
    producer: KafkaProducer,
    topic: str,
    *,
    key: bytes | None,
    value: bytes | None,
    headers: Headers | None = None,
    policy: ProducerPolicy | None = None,
) -> None:
    """Send one record and return once the broker acknowledged it; else ``PublishError``."""
    policy = policy or ProducerPolicy()
    where = f"Kafka topic={topic!r}"
    try:
        future = producer.send(topic, key=key, value=value, headers=headers or [])
    except KafkaError as exc:  # no metadata in time, buffer full, record too large
        raise translate(exc, where, policy) from exc
    try:
        future.get(timeout=policy.verdict_timeout_seconds)
    except KafkaError as exc:
        raise translate(exc, where, policy) from exc


def translate(
    exc: KafkaError, where: str, policy: ProducerPolicy
) -> PublishUnavailable | PublishRejected:
    """Kafka's error as the transport's: unavailable (try again) or rejected (will not store)."""
    if isinstance(exc, KafkaTimeoutError):
        return PublishUnavailable(
            f"{where} did not acknowledge within {policy.timeout_seconds}s: {exc}"
        )
    error_class = PublishUnavailable if exc.retriable else PublishRejected
    return error_class(f"{where} refused the record: {type(exc).__name__}: {exc}")


def new_consumer(
    bootstrap_servers: str,
    group_id: str,
    *,
    max_poll_records: int = 200,
    session_timeout_ms: int = 10000,
    heartbeat_interval_ms: int = 2000,
) -> KafkaConsumer:
    """A member of ``group_id`` that commits only when told, sized for the largest event."""
    return KafkaConsumer(
        bootstrap_servers=broker_list(bootstrap_servers),
        group_id=group_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=max_poll_records,
        session_timeout_ms=session_timeout_ms,
        heartbeat_interval_ms=heartbeat_interval_ms,
        max_poll_interval_ms=300000,
        max_partition_fetch_bytes=KAFKA_MAX_MESSAGE_BYTES,
        fetch_max_bytes=4 * KAFKA_MAX_MESSAGE_BYTES,
    )


def ensure_topics(bootstrap_servers: str, topics: Sequence[str], *, partitions: int) -> None:
    """Create the topics if missing, sized for the largest change event.

    A topic that already exists keeps its configuration: check its
    ``max.message.bytes`` (docs/indexing.md).
    """
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, got {partitions!r}")
    admin = KafkaAdminClient(bootstrap_servers=broker_list(bootstrap_servers))
    try:
        for topic in topics:
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics([NewTopic(
                    name=topic, num_partitions=partitions, replication_factor=1,
                    topic_configs={"max.message.bytes": str(KAFKA_MAX_MESSAGE_BYTES)},
                )])
    finally:
        admin.close()
