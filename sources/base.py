"""The source interface and the two values it returns.

A ``SourceEntry`` is what a listing says of one document: its id, the version
the source holds, when that version was made, and ``deleted=True`` for a
source that keeps tombstones (the change log, a CMS that lists deletions).
A source that forgets deleted documents (a folder) simply does not list them.
A document the source holds but cannot read (a folder's file without read
permission, not UTF-8, a FIFO, a symlink loop, too large) is listed with
``unreadable`` set to the reason, so a listing stays complete: the monitor,
``status`` and the reconcile show that one document as unreadable instead of
failing as a whole, or taking it for deleted.

Versions follow the change-event rule: they grow per document at the source,
and keep growing across a delete, so the index can compare them directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol

from chunker.errors import quote
from events.model import (
    MAX_SOURCE_VERSION,
    ContentType,
    EventMetadata,
    check_document_id,
)
from sources.errors import SourceDataError


class UnreadableKind(StrEnum):
    """Why a document cannot be read; a metric label, so a short fixed set."""

    PERMISSION = "permission"  # the process may not open it
    ENCODING = "encoding"  # not UTF-8 text
    BINARY = "binary"  # UTF-8, but with NUL bytes: not a text document
    FRONT_MATTER = "front_matter"  # bad YAML, version or changed_at, bad <meta>
    SYMLINK_LOOP = "symlink_loop"  # a symbolic link that never ends in a file
    OUTSIDE_ROOT = "outside_root"  # a symbolic link to a file outside the library
    NOT_REGULAR = "not_regular"  # a FIFO, socket, device: never opened
    TOO_LARGE = "too_large"  # above the configured size bound
    IO_ERROR = "io_error"  # any other error of the operating system
    HIDDEN = "hidden"  # a link whose target passes through a hidden name (.git, .env)
    HARD_LINK = "hard_link"  # a file with more than one hard link: its other name is unknown
    NAME = "name"  # a file name that is not UTF-8
    UNLISTABLE = "unlistable"  # a sub-folder that cannot be listed: its documents are kept
    DOCUMENT_ID = "document_id"  # its path makes an id the change event refuses


@dataclass(frozen=True, slots=True)
class Unreadable:
    """The reason a listed document cannot be read: its kind and a sentence naming the file."""

    kind: UnreadableKind
    detail: str

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.detail}"


@dataclass(frozen=True, slots=True)
class SourceEntry:
    """``version`` of an unreadable entry is 0: the source cannot say which version it holds."""

    document_id: str
    version: int
    changed_at: datetime  # timezone-aware, UTC
    deleted: bool = False
    unreadable: Unreadable | None = None


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
            raise SourceDataError(f"{where}: changed_at {quote(value)} is not ISO 8601") from exc
    else:
        raise SourceDataError(f"{where}: changed_at {quote(value)} is not a timestamp string")
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise SourceDataError(f"{where}: changed_at {quote(value)} has no time zone")
    return parsed.astimezone(UTC)


def parse_version(value: object, where: str) -> int:
    """A version: an integer in 1..MAX_SOURCE_VERSION (a bool or a float is refused).

    The bound is what a source may stamp (``events.model.MAX_SOURCE_VERSION``, the change
    event's ``MAX_VERSION`` less the pipeline's headroom): a bigger one could never be
    edited again, so the file is reported unreadable, with this reason.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SourceDataError(f"{where}: version {quote(value)} is not an integer >= 1")
    if value > MAX_SOURCE_VERSION:
        raise SourceDataError(f"{where}: version {quote(value)} is above the maximum "
                              f"{MAX_SOURCE_VERSION} a source may stamp")
    return value


def document_id_problem(document_id: str) -> Unreadable | None:
    """Why the change event refuses ``document_id`` (made from a file's path), or None.

    Every source that derives ids calls it where it builds one, so a file whose id is
    a look-alike (a zero-width or bidirectional character, not NFC, ...) is listed
    unreadable with the reason instead of published.
    """
    try:
        check_document_id(document_id)
    except ValueError as exc:
        return Unreadable(UnreadableKind.DOCUMENT_ID, f"document id {document_id!r} {exc}")
    return None
