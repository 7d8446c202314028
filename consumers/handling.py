"""What both workers (Kafka and the local queue) do with one polled batch.

Parse every record, hand the valid events to the ``BatchProcessor`` in one go,
dead-letter the poison with its source position, and count the outcomes. The
workers differ only in how they poll, back off and commit.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol, TypeVar

import structlog

from consumers.batch import BatchProcessor, Result
from consumers.dead_letter import DeadLetter, DeadLetterSink
from consumers.errors import PoisonEvent
from consumers.processor import EventProcessor, parse_event
from events.model import ChangeEvent
from metrics.definitions import WorkerMetrics

log = structlog.get_logger(__name__)


class RawRecord(Protocol):
    """A record as a transport delivers it (a Kafka ConsumerRecord, a queue Delivery)."""

    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...


R = TypeVar("R", bound=RawRecord)
Handled = list[tuple[R, Result, ChangeEvent | None]]


def attempt(
    records: Sequence[R], batch: BatchProcessor, dead_letters: DeadLetterSink
) -> Handled[R]:
    """One try at the whole batch: parse, process, dead-letter the poison."""
    parsed: list[tuple[R, ChangeEvent | PoisonEvent]] = []
    for record in records:
        try:
            parsed.append((record, parse_event(record.value)))
        except PoisonEvent as poison:
            parsed.append((record, poison))
    events = [e for _, e in parsed if isinstance(e, ChangeEvent)]
    results = iter(batch.handle_batch(events))
    handled: Handled[R] = [
        (record, item, None) if isinstance(item, PoisonEvent) else (record, next(results), item)
        for record, item in parsed
    ]
    for record, result, _ in handled:
        if isinstance(result, PoisonEvent):
            dead_letters.send(
                DeadLetter(record.key, record.value, result.reason, result.message,
                           record.topic, record.partition, record.offset)
            )
            log.warning("dead-lettered", reason=result.reason, error=result.message[:500],
                        topic=record.topic, partition=record.partition, offset=record.offset)
    return handled


class OutcomeCounter:
    """Counts a batch's outcomes and the chunks its processing wrote and deleted."""

    def __init__(self, metrics: WorkerMetrics, processor: EventProcessor) -> None:
        self.metrics = metrics
        self.processor = processor
        self.started = time.monotonic()
        self.written = processor.chunks_written
        self.deleted = processor.chunks_deleted

    def count(self, handled: Handled[R]) -> None:
        metrics = self.metrics
        elapsed = time.monotonic() - self.started
        for _record, result, event in handled:
            if isinstance(result, PoisonEvent):
                metrics.dead_letters.labels(reason=result.reason).inc()
                metrics.events.labels(outcome="dead_lettered").inc()
            else:
                metrics.events.labels(outcome=result.value).inc()
                if event is not None:
                    metrics.record_applied(result.value, event.changed_at)
            metrics.event_processing.observe(elapsed)
        metrics.chunks_written.inc(self.processor.chunks_written - self.written)
        metrics.chunks_deleted.inc(self.processor.chunks_deleted - self.deleted)
        metrics.last_event_processed.set(time.time())
