"""What the worker does with one polled batch, whatever the transport.

Parse every record, hand the valid events to the ``indexing.Indexer`` in one
go, dead-letter the poison with its source position, and count the outcomes
and the chunks the apply reports. How to poll, back off and commit is the
loop's (``consumers.worker``).

An exception that is neither poison nor transient (a bug, a value a store
overflows on that validation missed) would otherwise leave the loop, and the
same record would kill every restart. ``UnexpectedErrors`` turns it into the
record's own problem: the batch is retried one record at a time, each record a
bounded number of times, and a record that still fails is dead-lettered
(reason ``unexpected``, naming the document and the exception); the rest go on.
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
from consumers.retry import TRANSIENT
from events.model import ChangeEvent
from foundation.validation import one_line
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


def _document_of(raw: bytes) -> str:
    """``document 'x': `` for a message whose JSON names a document, to put in the reason."""
    try:
        doc = json.loads(raw).get("document_id")
    except (ValueError, UnicodeDecodeError, AttributeError):
        return ""
    return f"document {str(doc)[:300]!r}: " if doc is not None else ""


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
        detail = one_line(exc, root="<root>")
        raise PoisonEvent(
            "schema", f"{_document_of(raw)}not a valid ChangeEvent: {detail}"
        ) from exc


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
            dead_letter(dead_letters, record, result)
    return Handled(handled, applied.chunks_written, applied.chunks_deleted)


def dead_letter(dead_letters: DeadLetterSink, record: RawRecord, poison: PoisonEvent) -> None:
    dead_letters.send(
        DeadLetter(record.key, record.value, poison.reason, poison.message,
                   record.topic, record.partition, record.offset)
    )
    log.warning("dead-lettered", reason=poison.reason, error=poison.message[:500],
                topic=record.topic, partition=record.partition, offset=record.offset)


class UnexpectedErrors:
    """``attempt`` with a bound on unexpected exceptions: each record at most ``max_attempts``.

    The count of each record's failures, and the records given up on, live here
    across the loop's retries of a transient failure, so a batch retried after
    a transient failure neither tries a given-up record again nor sends its
    dead letter twice; both are forgotten once the batch is handled.
    """

    def __init__(self, max_attempts: int = 3) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts!r}")
        self.max_attempts = max_attempts
        self._failures: dict[tuple[str, int, int], int] = {}
        self._given_up: dict[tuple[str, int, int], PoisonEvent] = {}

    def attempt(
        self,
        records: Sequence[R],
        indexer: Indexer,
        dead_letters: DeadLetterSink,
        *,
        write_behind: Executor | None = None,
    ) -> Handled[R]:
        """``attempt``; an unexpected exception makes it go one record at a time."""
        handled = self._attempt(records, indexer, dead_letters, write_behind)
        for record in records:
            self._given_up.pop(_position(record), None)
        return handled

    def _attempt(
        self,
        records: Sequence[R],
        indexer: Indexer,
        dead_letters: DeadLetterSink,
        write_behind: Executor | None,
    ) -> Handled[R]:
        if not any(_position(r) in self._given_up for r in records):
            try:
                return attempt(records, indexer, dead_letters, write_behind=write_behind)
            except TRANSIENT:
                raise
            except Exception as exc:  # the point: no exception stops the loop
                if len(records) == 1:
                    return self._one(records[0], indexer, dead_letters, exc)
                log.warning("unexpected error in a batch; one record at a time",
                            error=f"{type(exc).__name__}: {exc}"[:500], records=len(records))
        parts: list[Handled[R]] = []
        for record in records:
            given_up = self._given_up.get(_position(record))
            if given_up is not None:
                parts.append(Handled([(record, given_up, None)], 0, 0))
                continue
            try:
                parts.append(attempt([record], indexer, dead_letters))
            except TRANSIENT:
                raise
            except Exception as exc:
                parts.append(self._one(record, indexer, dead_letters, exc))
        return Handled([r for p in parts for r in p.records],
                       sum(p.chunks_written for p in parts), sum(p.chunks_deleted for p in parts))

    def _one(
        self, record: R, indexer: Indexer, dead_letters: DeadLetterSink, first: Exception
    ) -> Handled[R]:
        """Retry one record until it succeeds or has failed ``max_attempts`` times."""
        where = _position(record)
        exc: Exception = first
        while True:
            failures = self._failures.get(where, 0) + 1
            self._failures[where] = failures
            log.warning("unexpected error handling a record", attempt=failures,
                        of=self.max_attempts, topic=record.topic, partition=record.partition,
                        offset=record.offset, error=f"{type(exc).__name__}: {exc}"[:500])
            if failures >= self.max_attempts:
                break
            try:
                handled = attempt([record], indexer, dead_letters)
            except TRANSIENT:
                raise
            except Exception as again:
                exc = again
                continue
            del self._failures[where]
            return handled
        doc = record.key.decode("utf-8", "replace") if record.key is not None else None
        poison = PoisonEvent(
            "unexpected",
            f"document {doc!r}: failed {failures} times: {type(exc).__name__}: {exc}",
        )
        dead_letter(dead_letters, record, poison)
        del self._failures[where]
        self._given_up[where] = poison
        return Handled([(record, poison, None)], 0, 0)


def _position(record: RawRecord) -> tuple[str, int, int]:
    return record.topic, record.partition, record.offset


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
