"""The interface every event transport implements for consumers: what a consumer group needs.

A consumer is first ``subscribe``d, with a callback for partitions it is
assigned and one for partitions taken away (a rebalance); both run inside
``poll``, before any record of a newly assigned partition is handed out, and
a revocation callback may still ``commit``. ``poll`` hands out ``Delivery``
records in order per partition, never one of a ``pause``d partition (which
keeps its place: after ``resume`` the next record is the one not yet handed
out). ``commit(deliveries)`` marks those records, and every earlier record of
their partitions, as processed. Anything polled but not committed is delivered
again to the next consumer (after a crash, a close without commit, or a
rebalance): at-least-once, never a gap.

Errors::

    ConsumeError          the transport cannot be read or written now (the worker retries)
    └── CommitLost        the partitions moved to another member; their commit is its job

Implemented by ``transport.kafka_consumer.KafkaEventConsumer`` (a member of a
Kafka consumer group) and ``transport.local_clients.LocalQueueConsumer`` (the
embedded mode: one partition, always assigned to the one consumer holding the
lease). One contract test suite runs against both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol


class ConsumeError(Exception):
    """The transport cannot be read from (or committed to) now; the worker retries."""


class CommitLost(ConsumeError):
    """The commit was refused because the partitions now belong to another member."""


@dataclass(frozen=True, order=True)
class Partition:
    topic: str
    number: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.number}]"


@dataclass(frozen=True)
class Delivery:
    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int

    @property
    def source(self) -> Partition:
        return Partition(self.topic, self.partition)


Rebalance = Callable[[frozenset[Partition]], None]


def ignore_rebalance(_partitions: frozenset[Partition]) -> None:
    return None


def last_per_partition(deliveries: Iterable[Delivery]) -> dict[Partition, Delivery]:
    """The highest delivery of each partition (what a commit of ``deliveries`` records)."""
    last: dict[Partition, Delivery] = {}
    for d in deliveries:
        seen = last.get(d.source)
        if seen is None or d.offset > seen.offset:
            last[d.source] = d
    return last


class EventConsumer(Protocol):
    @property
    def name(self) -> str:
        """What the transport is called in metrics and logs ("kafka", "queue")."""
        ...

    def subscribe(
        self, on_assign: Rebalance = ignore_rebalance, on_revoke: Rebalance = ignore_rebalance,
    ) -> None:
        """Join the topic; the callbacks run inside ``poll`` when the assignment changes."""
        ...

    def poll(self, max_records: int, timeout_s: float) -> list[Delivery]:
        """Up to ``max_records`` records not yet handed out; waits up to ``timeout_s``."""
        ...

    def assignment(self) -> frozenset[Partition]:
        """The partitions this consumer reads now."""
        ...

    def pause(self, partitions: Iterable[Partition]) -> None:
        """Hand out nothing of these partitions until ``resume`` (they keep their place)."""
        ...

    def resume(self, partitions: Iterable[Partition]) -> None:
        """Undo ``pause``."""
        ...

    def commit(self, deliveries: Sequence[Delivery]) -> None:
        """Mark these records and every earlier one of their partitions as processed."""
        ...

    def backlog(self, delivery: Delivery) -> int | None:
        """Records after ``delivery`` in its partition, where the transport knows it cheaply."""
        ...

    def unreachable(self) -> str | None:
        """Why the transport counts as out of reach now (e.g. no group coordinator), or None."""
        ...

    def close(self) -> None:
        """Leave without committing anything more."""
        ...
