"""The one Kafka module: how this system connects, produces, consumes and creates topics.

Every client the project makes (producer, consumer, admin) is built from one
``KafkaConnection`` (``transport.kafka_connection``): the brokers, the security
protocol, SASL credentials, a CA and an optional client certificate. A plain
``"host:port,..."`` string is accepted wherever a connection is, as a PLAINTEXT
connection, which keeps tests and local call sites short. This module is the
front door: it re-exports the connection and the topics (``transport.kafka_topics``).

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

A client that cannot be made at all raises one line saying why, found by
``transport.kafka_diagnose`` (kafka-python itself only times out)::

    KafkaConnectError
    ├── KafkaUnreachable     nothing answered: down, network, wrong address (retry)
    └── KafkaRefused         it answered and refused this configuration: SASL login
                             failed, certificate not trusted, TLS vs plaintext port;
                             retrying will not mend it until the configuration changes

``new_consumer`` is the worker's consumer group member (explicit commits, sized
for the largest event); ``ensure_topics`` and ``check_topics`` create and verify
the topics (partitions, replication factor, ``min.insync.replicas``,
``max.message.bytes``). Keys are document ids, so every change of one document
lands on one partition, in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError, KafkaTimeoutError

from transport.kafka_connection import (
    KafkaConnectError,
    KafkaConnection,
    KafkaRefused,
    KafkaUnreachable,
    as_connection,
    broker_list,
)
from transport.kafka_diagnose import diagnose
from transport.kafka_topics import (
    KAFKA_MAX_MESSAGE_BYTES,
    TopicsCreated,
    TopicSpec,
    check_topics,
    ensure_topics,
    open_admin,
)
from transport.publisher import PublishRejected, PublishUnavailable

__all__ = [
    "KAFKA_MAX_MESSAGE_BYTES", "KafkaConnectError", "KafkaConnection", "KafkaRefused",
    "KafkaUnreachable", "ProducerPolicy", "TopicSpec", "TopicsCreated", "as_connection",
    "broker_list", "check_topics", "ensure_topics", "new_consumer", "new_producer",
    "open_admin", "send", "translate",
]

# How much longer than the producer's own delivery timeout we wait for its verdict.
VERDICT_GRACE_SECONDS = 2.0

Headers = list[tuple[str, bytes]]


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

    def options(self, connection: KafkaConnection | str) -> dict[str, Any]:
        timeout_ms = max(1, int(self.timeout_seconds * 1000))
        return {
            **as_connection(connection).client_options(),
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


def new_producer(
    connection: KafkaConnection | str, policy: ProducerPolicy | None = None
) -> KafkaProducer:
    """A producer on the one policy; a failure to connect is ``PublishUnavailable``, saying why."""
    policy = policy or ProducerPolicy()
    connection = as_connection(connection)
    try:
        return KafkaProducer(**policy.options(connection))
    except KafkaError as exc:
        reason = diagnose(connection, exc, timeout_s=policy.timeout_seconds)
        raise PublishUnavailable(str(reason)) from exc


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
    connection: KafkaConnection | str,
    group_id: str,
    *,
    max_poll_records: int = 200,
    session_timeout_ms: int = 10000,
    heartbeat_interval_ms: int = 2000,
) -> KafkaConsumer:
    """A member of ``group_id`` that commits only when told, sized for the largest event.

    A failure to connect is ``KafkaConnectError`` (``KafkaUnreachable`` or
    ``KafkaRefused``), one line saying why.
    """
    connection = as_connection(connection)
    try:
        return KafkaConsumer(
            **connection.client_options(),
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
    except KafkaError as exc:
        raise diagnose(connection, exc) from exc
