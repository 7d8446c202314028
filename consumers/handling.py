"""What the worker does with one polled batch, whatever the transport.

Parse every record, hand the valid events to the ``indexing.Indexer`` in one
go, dead-letter the poison with its source position, and count the outcomes
and the chunks the apply reports. How to poll, back off and commit is the
loop's (``consumers.worker``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import pydantic
import structlog

from consumers.dead_letter import DeadLetter, DeadLetterSink
from events.model import ChangeEvent
from indexing.core import Indexer
from indexing.errors import PoisonEvent
from indexing.model import Result
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


@dataclass(frozen=True)
class Handled(Generic[R]):
    """One attempt at a batch: each record with its result (and event), the chunks moved."""

    records: list[tuple[R, Result, ChangeEvent | None]]
    chunks_written: int
    chunks_deleted: int


def parse_event(raw: bytes | None) -> ChangeEvent:
    """Bytes from the transport to a ChangeEvent, or ``PoisonEvent`` saying why not."""
    if raw is None:
        raise PoisonEvent("not_json", "empty message (no value)")
    try:
        json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PoisonEvent("not_json", f"not JSON: {exc}") from exc
    try:
        return ChangeEvent.from_json_bytes(raw)
    except pydantic.ValidationError as exc:
        detail = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise PoisonEvent("schema", f"not a valid ChangeEvent: {detail}") from exc


def attempt(
    records: Sequence[R],
    indexer: Indexer,
    dead_letters: DeadLetterSink,
    *,
    write_behind: Executor | None = None,
) -> Handled[R]:
    """One try at the whole batch: parse, apply, dead-letter the poison."""
    parsed: list[tuple[R, ChangeEvent | PoisonEvent]] = []
    for record in records:
        try:
            parsed.append((record, parse_event(record.value)))
        except PoisonEvent as poison:
            parsed.append((record, poison))
    events = [e for _, e in parsed if isinstance(e, ChangeEvent)]
    applied = indexer.apply(events, write_behind=write_behind)
    results = iter(applied.results)
    handled: list[tuple[R, Result, ChangeEvent | None]] = [
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
    return Handled(handled, applied.chunks_written, applied.chunks_deleted)


class OutcomeCounter:
    """Counts a batch's outcomes and the chunks its apply wrote and deleted."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        self.metrics = metrics
        self.started = time.monotonic()

    def count(self, handled: Handled[R]) -> None:
        metrics = self.metrics
        elapsed = time.monotonic() - self.started
        for _record, result, event in handled.records:
            if isinstance(result, PoisonEvent):
                metrics.dead_letters.labels(reason=result.reason).inc()
                metrics.events.labels(outcome="dead_lettered").inc()
            else:
                metrics.events.labels(outcome=result.value).inc()
                if event is not None:
                    metrics.record_applied(result.value, event.changed_at)
            metrics.event_processing.observe(elapsed)
        metrics.chunks_written.inc(handled.chunks_written)
        metrics.chunks_deleted.inc(handled.chunks_deleted)
        metrics.last_event_processed.set(time.time())
