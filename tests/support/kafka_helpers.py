"""Kafka helpers for tests: publishing events, reading dead letters, waiting for no lag."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from kafka import KafkaConsumer

from events.model import ChangeEvent
from support.kafka_admin import lag_or_none
from support.waiting import wait_until
from transport.kafka import new_producer


def publish_events(
    bootstrap: str, topic: str, events: Iterable[ChangeEvent | tuple[bytes, bytes | None]]
) -> int:
    """Publish events keyed by document id (or raw (key, value) pairs); wait for acks."""
    producer = new_producer(bootstrap)
    sent = 0
    futures = []
    key: bytes
    value: bytes | None
    try:
        for event in events:
            if isinstance(event, ChangeEvent):
                key, value = event.document_id.encode(), event.to_json_bytes()
            else:
                key, value = event
            futures.append(producer.send(topic, key=key, value=value))
            sent += 1
        producer.flush(timeout=60)
        for future in futures:
            future.get(timeout=60)  # a refused record raises here instead of vanishing
    finally:
        producer.close(timeout=10)
    return sent


def read_all(bootstrap: str, topic: str, *, expect: int, timeout_s: float = 30.0) -> list[Any]:
    """Every record of a topic from the start (waits until ``expect`` arrived or timeout)."""
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
        enable_auto_commit=False, group_id=None, consumer_timeout_ms=1000,
    )
    records: list[Any] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(records) < expect:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        # one more short poll: anything beyond what we expected is a failure to see
        for batch in consumer.poll(timeout_ms=500).values():
            records.extend(batch)
    finally:
        consumer.close()
    return records


def wait_for_lag_zero(bootstrap: str, group: str, topic: str, timeout_s: float = 120.0,
                      check: Callable[[], object] | None = None) -> None:
    """Until ``group`` has committed every record of ``topic``; ``check`` runs on each try
    (to fail at once when the worker died). A broker still electing its coordinator is
    "not yet" (``lag_or_none``), not an error."""

    def lag() -> int | None:
        if check is not None:
            check()
        return lag_or_none(bootstrap, group, topic)

    wait_until(lag, timeout_s, f"group {group!r} to have no lag on {topic!r}", every_s=0.5,
               accept=lambda n: n == 0)
