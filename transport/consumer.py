"""The interface every event transport implements for consumers.

A consumer hands out ``Delivery`` records in order (per partition) and forgets
nothing until told: ``commit(deliveries)`` marks those records, and every
earlier record of their partitions, as processed. Anything polled but not
committed is delivered again to the next consumer (after a crash, a close
without commit, or a rebalance): at-least-once, never a gap.

Implemented by ``transport.local_queue.LocalQueueConsumer`` (the embedded
mode) and ``transport.kafka_consumer.KafkaEventConsumer``; one contract test
suite runs against both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class ConsumeError(Exception):
    """The transport cannot be read from now (the worker retries)."""


@dataclass(frozen=True)
class Delivery:
    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int


class EventConsumer(Protocol):
    def poll(self, max_records: int, timeout_s: float) -> list[Delivery]:
        """Up to ``max_records`` records not yet handed out; waits up to ``timeout_s``."""
        ...

    def commit(self, deliveries: Sequence[Delivery]) -> None:
        """Mark these records and every earlier one of their partitions as processed."""
        ...

    def close(self) -> None:
        """Leave without committing anything more."""
        ...
