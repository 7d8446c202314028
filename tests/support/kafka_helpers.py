"""Kafka helpers for tests: unique topics, publishing events, reading dead letters, lag."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from kafka import KafkaConsumer

from consumers.transport import group_lag, make_producer
from events.model import ChangeEvent


def publish_events(
    bootstrap: str, topic: str, events: Iterable[ChangeEvent | tuple[bytes, bytes | None]]
) -> int:
    """Publish events keyed by document id (or raw (key, value) pairs); wait for acks."""
    producer = make_producer(bootstrap)
    sent = 0
    futures = []
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
                      check: Any = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if group_lag(bootstrap, group, topic) == 0:
            return
        if check is not None:
            check()
        time.sleep(0.5)
    raise AssertionError(
        f"group {group!r} still has lag {group_lag(bootstrap, group, topic)} on {topic!r}"
    )
