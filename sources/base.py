"""The source interface and the two values it returns.

A ``SourceEntry`` is what a listing says of one document: its id, the version
the source holds, when that version was made, and ``deleted=True`` for a
source that keeps tombstones (the change log, a CMS that lists deletions).
A source that forgets deleted documents (a folder) simply does not list them.

Versions follow the change-event rule: they grow per document at the source,
and keep growing across a delete, so the index can compare them directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from events.model import ContentType, EventMetadata
from sources.errors import SourceDataError


@dataclass(frozen=True, slots=True)
class SourceEntry:
    document_id: str
    version: int
    changed_at: datetime  # timezone-aware, UTC
    deleted: bool = False


@dataclass(frozen=True, slots=True)
class SourceDocument:
    document_id: str
    version: int
    changed_at: datetime
    content: str
    content_type: ContentType = "text/markdown"
    metadata: EventMetadata = field(default_factory=EventMetadata)


class Source(Protocol):
    @property
    def name(self) -> str:
        """A short label for logs and metrics (``cms``, ``folder``, ``changelog``)."""

    def list_documents(self) -> Iterator[SourceEntry]:
        """Every document the source knows, once each, in no particular order.

        Raises ``SourceUnavailableError`` or ``SourceDataError`` (possibly after
        some entries were yielded: a caller that needs the whole listing must
        treat an error as "listing failed", never as "the rest does not exist").
        """

    def get_document(self, document_id: str) -> SourceDocument:
        """The document's current version with its content.

        Raises ``DocumentNotFoundError`` when the source does not hold it (or
        holds only a tombstone).
        """

    def close(self) -> None:
        """Release connections or file handles."""


def parse_changed_at(value: object, where: str) -> datetime:
    """A timezone-aware datetime from an ISO 8601 string (``Z`` allowed) or datetime.

    Raises ``SourceDataError`` naming ``where`` and the bad value. A naive
    time is refused: guessing its zone would make every lag wrong by hours.
    """
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise SourceDataError(f"{where}: changed_at {value!r} is not ISO 8601") from exc
    else:
        raise SourceDataError(f"{where}: changed_at {value!r} is not a timestamp string")
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise SourceDataError(f"{where}: changed_at {value!r} has no time zone")
    return parsed.astimezone(UTC)


def parse_version(value: object, where: str) -> int:
    """A version: an integer >= 1 (a bool or a float is refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SourceDataError(f"{where}: version {value!r} is not an integer >= 1")
    return value
