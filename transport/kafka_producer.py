"""``EventPublisher`` on Kafka: an idempotent producer with acks=all, keyed by document id.

``publish`` returns only after the broker has acknowledged the record with
acks=all. Its time is bounded: the producer is configured so that it gives up
on a record by itself (``delivery_timeout_ms``) within ``timeout_seconds``, and
``publish`` waits a little longer than that to learn the real outcome. So when
``publish`` raises, the record has been dropped by the producer and will not
appear later on its own; the only exception is the ambiguity Kafka has for
any producer (the broker wrote the record but its answer was lost), which at
worst yields a duplicate that the worker's version guard turns into a no-op.

The producer is created lazily and re-created after a failed attempt at most
once per ``reconnect_interval_seconds``, so the receiver starts, and answers
503 quickly, while Kafka is down.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import structlog
from kafka import KafkaProducer
from kafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError

from events.model import ChangeEvent
from transport.publisher import PublishRejected, PublishUnavailable

log = structlog.get_logger(__name__)

# How much longer than the producer's own delivery timeout we wait for its verdict.
_VERDICT_GRACE_SECONDS = 2.0
# The largest change event a topic must hold: a 10 MiB webhook body plus the event's
# own fields. Kafka's default (~1 MiB) would refuse every large policy document.
KAFKA_MAX_MESSAGE_BYTES = 11 * 1024 * 1024


@dataclass(frozen=True)
class KafkaPublisherConfig:
    bootstrap_servers: str
    topic: str
    timeout_seconds: float = 5.0
    # The topic's max.message.bytes must be at least this (Kafka's default is ~1 MB).
    max_message_bytes: int = KAFKA_MAX_MESSAGE_BYTES
    reconnect_interval_seconds: float = 1.0
    client_id: str = "policy-indexer-publisher"

    def servers(self) -> list[str]:
        return [s.strip() for s in self.bootstrap_servers.split(",") if s.strip()]

    def producer_configs(self) -> dict[str, Any]:
        timeout_ms = max(1, int(self.timeout_seconds * 1000))
        return {
            "bootstrap_servers": self.servers(),
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


class KafkaEventPublisher:
    """Thread-safe; every method blocks, so async callers run it in a worker thread."""

    def __init__(self, config: KafkaPublisherConfig) -> None:
        if not config.servers():
            raise ValueError(f"bootstrap_servers={config.bootstrap_servers!r} names no broker")
        self._config = config
        self._lock = threading.Lock()
        self._producer: KafkaProducer | None = None
        self._next_attempt = 0.0
        self._closed = False

    @property
    def config(self) -> KafkaPublisherConfig:
        return self._config

    def publish(self, event: ChangeEvent) -> None:
        producer = self._get_producer()
        cfg = self._config
        try:
            future = producer.send(
                cfg.topic, key=event.document_id.encode("utf-8"), value=event.to_json_bytes()
            )
        except KafkaError as exc:  # no metadata in time, buffer full, record too large
            raise self._translate(exc) from exc
        try:
            future.get(timeout=cfg.timeout_seconds + _VERDICT_GRACE_SECONDS)
        except KafkaError as exc:
            if not future.is_done:
                # Cannot happen while delivery_timeout_ms holds; say so rather than guess.
                log.error("kafka publish outcome unknown", event_id=event.event_id,
                          document_id=event.document_id, topic=cfg.topic)
            raise self._translate(exc) from exc

    def _translate(self, exc: KafkaError) -> PublishUnavailable | PublishRejected:
        cfg = self._config
        where = f"Kafka at {cfg.bootstrap_servers}, topic={cfg.topic!r}"
        if isinstance(exc, KafkaTimeoutError):
            return PublishUnavailable(
                f"{where} did not acknowledge within {cfg.timeout_seconds}s: {exc}"
            )
        error_class = PublishUnavailable if exc.retriable else PublishRejected
        return error_class(f"{where} refused the event: {type(exc).__name__}: {exc}")

    def ready(self) -> bool:
        if not self._any_server_listening():
            return False
        try:
            self._get_producer()
        except PublishUnavailable:
            return False
        return True

    def _any_server_listening(self) -> bool:
        return any(_tcp_reachable(s, timeout=1.0) for s in self._config.servers())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            producer, self._producer = self._producer, None
        if producer is not None:
            producer.close(timeout=self._config.timeout_seconds)

    def _get_producer(self) -> KafkaProducer:
        producer = self._producer
        if producer is not None:
            return producer
        cfg = self._config
        if not self._lock.acquire(timeout=cfg.timeout_seconds):
            raise PublishUnavailable(f"still connecting to Kafka at {cfg.bootstrap_servers}")
        try:
            if self._closed:
                raise PublishUnavailable("the Kafka publisher is closed")
            if self._producer is not None:
                return self._producer
            wait = self._next_attempt - time.monotonic()
            if wait > 0:
                raise PublishUnavailable(
                    f"Kafka at {cfg.bootstrap_servers} was unreachable; next try in {wait:.1f}s"
                )
            try:
                # kafka-python leaks the sockets of a producer whose bootstrap fails:
                # look before building one.
                if not self._any_server_listening():
                    raise KafkaConnectionError(f"no broker listens at {cfg.bootstrap_servers}")
                self._producer = KafkaProducer(**cfg.producer_configs())
            except KafkaError as exc:
                self._next_attempt = time.monotonic() + cfg.reconnect_interval_seconds
                log.warning("kafka unreachable", servers=cfg.bootstrap_servers,
                            error=f"{type(exc).__name__}: {exc}")
                raise PublishUnavailable(
                    f"cannot connect to Kafka at {cfg.bootstrap_servers}: {type(exc).__name__}"
                ) from exc
            log.info("kafka producer connected", servers=cfg.bootstrap_servers, topic=cfg.topic)
            return self._producer
        finally:
            self._lock.release()


def _tcp_reachable(server: str, timeout: float) -> bool:
    host, _, port = server.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout):
            return True
    except (OSError, ValueError):
        return False
