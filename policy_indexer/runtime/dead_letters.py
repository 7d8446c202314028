"""Dead letters you can see and retry, in either mode (``policy-indexer dead-letters``).

Each mode's backends hold its own (``Backends.list_dead_letters`` and
``retry_dead_letters``, which read and write them with the functions below).

Embedded: the ``dead_letters`` table of the local queue; an id is the row id, and
a retry moves the letter back onto the change topic in one transaction (a retry
that fails again is a new dead letter, under a new id). Kafka: the dead-letter
topic, read from its start to its end offsets by a consumer of no group (it
commits nothing, so reading changes nothing); an id is
``<partition>:<offset>`` in that topic, and a retry republishes the original
key and value to the change topic on the one producer policy. Kafka cannot
remove a record, so a retried letter stays listed; ``list`` shows each failed
event once (the letters of a redelivered or resent event share a fingerprint,
``transport.local_queue.dead_letter_fingerprint``, the one the embedded table is
unique on).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import structlog

from consumers.dead_letter import DeadLetter
from indexing.errors import CONTENT_REASONS
from policy_indexer.runtime.backends import Backends, open_backends
from policy_indexer.runtime.connections import kafka_connection
from policy_indexer.settings import Settings
from transport.local_queue import LocalQueue, dead_letter_fingerprint

READ_TIMEOUT_S = 20.0

log = structlog.get_logger(__name__)


class DeadLetterError(Exception):
    """The dead letters cannot be read or retried (the message says which and why)."""


class DeadLetterNotFound(DeadLetterError):
    """No dead letter has that id."""


@dataclass(frozen=True)
class DeadLetterView:
    """One dead letter as the command shows it."""

    letter_id: str
    document_id: str | None
    reason: str
    error: str
    source: str  # topic/partition/offset of the failed event
    dead_at: datetime | None
    key: bytes | None
    value: bytes | None

    def summary(self) -> dict[str, object]:
        return {
            "id": self.letter_id, "document_id": self.document_id, "reason": self.reason,
            "error": self.error, "source": self.source,
            "dead_at": self.dead_at.isoformat() if self.dead_at else None,
            "value_bytes": None if self.value is None else len(self.value),
        }


def _document(key: bytes | None) -> str | None:
    return None if key is None else key.decode("utf-8", "replace")


class _Letter(Protocol):
    @property
    def reason(self) -> str: ...
    @property
    def error(self) -> str: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


def refusals(letters: Iterable[_Letter]) -> dict[tuple[str, int], str]:
    """(document id, version) to ``reason: error`` for each version refused for its content."""
    found: dict[tuple[str, int], str] = {}
    for letter in letters:
        if letter.reason not in CONTENT_REASONS or letter.key is None or letter.value is None:
            continue
        try:
            version = json.loads(letter.value).get("version")
        except (ValueError, AttributeError):
            continue
        if isinstance(version, int) and not isinstance(version, bool):
            document_id = letter.key.decode("utf-8", "replace")
            found[(document_id, version)] = f"{letter.reason}: {letter.error}"[:400]
    return found


class RefusalReader:
    """The versions the mode's worker refused for their content (``refusals``), read from
    its dead letters every time a process asks (the monitor, each cycle).

    A read that fails keeps the last answer (logged): a Kafka blip must not turn every
    refused document back into a growing lag, nor fail the monitor's cycle."""

    def __init__(self, backends: Backends) -> None:
        self.backends = backends
        self._last: set[tuple[str, int]] = set()

    def __call__(self) -> set[tuple[str, int]]:
        try:
            self._last = set(refusals(self.backends.list_dead_letters()))
        except DeadLetterError as exc:
            log.warning("dead letters unreadable: refused versions as last read",
                        error=str(exc)[:200], known=len(self._last))
        return self._last


def list_dead_letters(settings: Settings) -> list[DeadLetterView]:
    """Every dead letter of the mode, oldest first, one per failed event."""
    backends = open_backends(settings)
    try:
        return backends.list_dead_letters()
    finally:
        backends.close()


def show_dead_letter(settings: Settings, letter_id: str) -> DeadLetterView:
    for letter in list_dead_letters(settings):
        if letter.letter_id == letter_id:
            return letter
    raise DeadLetterNotFound(f"no dead letter has id={letter_id!r} (see `dead-letters list`)")


def retry_dead_letters(settings: Settings, letter_ids: Sequence[str]) -> int:
    """Put these dead letters back on the change topic; how many went back.

    Raises ``DeadLetterNotFound`` naming the first id that is not a dead letter,
    before anything is retried.
    """
    backends = open_backends(settings)
    try:
        known = {letter.letter_id: letter for letter in backends.list_dead_letters()}
        missing = [i for i in letter_ids if i not in known]
        if missing:
            raise DeadLetterNotFound(
                f"no dead letter has id={missing[0]!r} (see `dead-letters list`)")
        return backends.retry_dead_letters([known[i] for i in letter_ids])
    finally:
        backends.close()


def queue_letters(queue: LocalQueue, topic: str) -> list[DeadLetterView]:
    """The embedded mode's: the local queue's ``dead_letters`` table, an id its row id."""
    return [
        DeadLetterView(
            str(letter_id), _document(d.key), d.reason, d.error,
            f"{d.source_topic}/{d.source_partition}/{d.source_offset}",
            datetime.fromtimestamp(d.dead_at, UTC), d.key, d.value,
        )
        for letter_id, d in queue.numbered_dead_letters(topic)
    ]


def kafka_letters(settings: Settings) -> list[DeadLetterView]:
    """Kafka mode's: the dead-letter topic, from its start to its end offsets."""
    from kafka import KafkaConsumer, TopicPartition  # noqa: PLC0415
    from kafka.errors import KafkaError  # noqa: PLC0415

    from transport.kafka_diagnose import diagnose  # noqa: PLC0415

    topic = settings.kafka_dead_letter_topic
    connection = kafka_connection(settings)
    try:
        consumer = KafkaConsumer(**connection.client_options(), enable_auto_commit=False,
                                 request_timeout_ms=10_000)
    except KafkaError as exc:
        raise DeadLetterError(str(diagnose(connection, exc))) from exc
    try:
        parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        if not parts:
            return []
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        ends = consumer.end_offsets(parts)
        letters: list[tuple[int, int, DeadLetterView]] = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while any(consumer.position(tp) < ends[tp] for tp in parts):
            if time.monotonic() > deadline:
                raise DeadLetterError(
                    f"reading {topic!r} did not reach its end offsets within {READ_TIMEOUT_S}s"
                )
            for tp, records in consumer.poll(timeout_ms=500).items():
                for r in records:
                    if r.offset >= ends[tp]:
                        continue
                    h = DeadLetter.read_headers(list(r.headers or []))
                    source = (f"{h.get('source-topic')}/{h.get('source-partition')}/"
                              f"{h.get('source-offset')}")
                    letters.append((r.timestamp, r.offset, DeadLetterView(
                        f"{tp.partition}:{r.offset}", _document(r.key), h.get("reason", "?"),
                        h.get("error", ""), source,
                        datetime.fromtimestamp(r.timestamp / 1000, UTC), r.key, r.value,
                    )))
    except KafkaError as exc:
        raise DeadLetterError(f"cannot read {topic!r}: {exc}") from exc
    finally:
        consumer.close()
    seen: set[str] = set()
    unique = []
    for _ts, _offset, letter in sorted(letters, key=lambda item: (item[0], item[1])):
        fingerprint = dead_letter_fingerprint(letter.key, letter.value, letter.reason)
        if fingerprint not in seen:
            seen.add(fingerprint)
            unique.append(letter)
    return unique


def kafka_republish(settings: Settings, letters: Sequence[DeadLetterView]) -> int:
    """Each letter's key and value sent again to the change topic."""
    from transport.kafka import ProducerPolicy  # noqa: PLC0415
    from transport.kafka_producer import KafkaSender  # noqa: PLC0415
    from transport.publisher import PublishError  # noqa: PLC0415

    sender = KafkaSender(kafka_connection(settings), ProducerPolicy())
    sent = 0
    try:
        for letter in letters:
            try:
                sender.send(settings.kafka_topic, key=letter.key, value=letter.value)
            except PublishError as exc:
                raise DeadLetterError(
                    f"retry of {letter.letter_id} to {settings.kafka_topic!r} failed after "
                    f"{sent} sent: {exc}"
                ) from exc
            sent += 1
    finally:
        sender.close()
    return sent
