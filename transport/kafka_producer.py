"""Producing to Kafka from a long-lived process: ``KafkaSender`` and the ``KafkaEventPublisher``.

Both use the one ``transport.kafka.ProducerPolicy``: ``send`` returns only after
the broker acknowledged the record with acks=all, and its time is bounded (the
producer gives up on a record by itself within ``timeout_seconds``, and we wait
a little longer to learn the real outcome). So when it raises, the record has
been dropped by the producer and will not appear later on its own; the only
exception is the ambiguity Kafka has for any producer (the broker wrote the
record but its answer was lost), which at worst yields a duplicate that the
worker's version guard turns into a no-op.

The producer is created lazily and re-created after a failed attempt at most
once per ``reconnect_interval_seconds``, so the webhook receiver starts, and
answers 503 quickly, while Kafka is down, and a worker starts without Kafka and
dead-letters once it is back.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

import structlog
from kafka import KafkaProducer
from kafka.errors import KafkaConnectionError, KafkaError

from events.model import ChangeEvent
from transport.kafka import (
    KAFKA_MAX_MESSAGE_BYTES,
    Headers,
    KafkaConnection,
    ProducerPolicy,
    as_connection,
    send,
)
from transport.kafka_connection import KafkaRefused
from transport.kafka_diagnose import diagnose
from transport.publisher import PublishUnavailable

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class KafkaPublisherConfig:
    bootstrap_servers: KafkaConnection | str  # a connection, or "host:port,..." as PLAINTEXT
    topic: str
    timeout_seconds: float = 5.0
    # The topic's max.message.bytes must be at least this (Kafka's default is ~1 MB).
    max_message_bytes: int = KAFKA_MAX_MESSAGE_BYTES
    reconnect_interval_seconds: float = 1.0
    client_id: str = "policy-indexer-publisher"

    def policy(self) -> ProducerPolicy:
        return ProducerPolicy(self.timeout_seconds, self.max_message_bytes, self.client_id)


class KafkaSender:
    """One lazily connected producer on the policy. Thread-safe; every method blocks."""

    def __init__(
        self, connection: KafkaConnection | str, policy: ProducerPolicy, *,
        reconnect_interval_seconds: float = 1.0,
    ) -> None:
        self.connection = as_connection(connection)
        self.servers = self.connection.servers()
        self.bootstrap_servers = self.connection.bootstrap_servers
        self.policy = policy
        self.reconnect_interval_seconds = reconnect_interval_seconds
        self._lock = threading.Lock()
        self._producer: KafkaProducer | None = None
        self._next_attempt = 0.0
        self._last_error = ""
        self._closed = False

    def send(self, topic: str, *, key: bytes | None, value: bytes | None,
             headers: Headers | None = None) -> None:
        """The record acknowledged by the broker, or ``PublishError`` (see the module)."""
        send(self._get_producer(), topic, key=key, value=value, headers=headers,
             policy=self.policy)

    def ready(self) -> bool:
        if not any(_tcp_reachable(s, timeout=1.0) for s in self.servers):
            return False
        try:
            self._get_producer()
        except PublishUnavailable:
            return False
        return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.close(timeout=self.policy.timeout_seconds)

    def _get_producer(self) -> KafkaProducer:
        producer = self._producer
        if producer is not None:
            return producer
        where = self.bootstrap_servers
        if not self._lock.acquire(timeout=self.policy.timeout_seconds):
            raise PublishUnavailable(f"still connecting to Kafka at {where}")
        try:
            if self._closed:
                raise PublishUnavailable("the Kafka producer is closed")
            if self._producer is not None:
                return self._producer
            wait = self._next_attempt - time.monotonic()
            if wait > 0:
                raise PublishUnavailable(f"{self._last_error}; next try in {wait:.1f}s")
            try:
                # kafka-python leaks the sockets of a producer whose bootstrap fails:
                # look before building one.
                if not any(_tcp_reachable(s, timeout=1.0) for s in self.servers):
                    raise KafkaConnectionError(f"no broker listens at {where}")
                self._producer = KafkaProducer(**self.policy.options(self.connection))
            except KafkaError as exc:
                self._next_attempt = time.monotonic() + self.reconnect_interval_seconds
                # One line saying why (a refused password, an untrusted CA), never
                # kafka-python's bare bootstrap timeout.
                reason = diagnose(self.connection, exc, timeout_s=self.policy.timeout_seconds)
                self._last_error = str(reason)
                log.warning("kafka unreachable", servers=where, error=str(reason),
                            refused=isinstance(reason, KafkaRefused))
                raise PublishUnavailable(str(reason)) from exc
            log.info("kafka producer connected", servers=where)
            return self._producer
        finally:
            self._lock.release()


class KafkaEventPublisher:
    """``EventPublisher`` on Kafka, keyed by document id (the webhook's and the watcher's)."""

    def __init__(self, config: KafkaPublisherConfig) -> None:
        self._config = config
        self._sender = KafkaSender(config.bootstrap_servers, config.policy(),
                                   reconnect_interval_seconds=config.reconnect_interval_seconds)

    @property
    def config(self) -> KafkaPublisherConfig:
        return self._config

    def publish(self, event: ChangeEvent) -> None:
        self._sender.send(self._config.topic, key=event.document_id.encode("utf-8"),
                          value=event.to_json_bytes())

    def ready(self) -> bool:
        return self._sender.ready()

    def close(self) -> None:
        self._sender.close()


def _tcp_reachable(server: str, timeout: float) -> bool:
    host, _, port = server.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout):
            return True
    except (OSError, ValueError):
        return False
