"""The change event: one schema for every transport (Kafka, the local queue, replays).

A change event says that a document changed at the source: it was upserted
(with its whole content) or deleted. ``version`` grows per document at the
source; the worker's version guard uses it to keep the index from going back
in time. The JSON Schema in ``events/change-event.schema.json`` is generated
from this model (``python -m events.schema``) and checked by a test.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import date
from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

# What every store can hold (SQLite INTEGER and Elasticsearch ``long`` are signed 64-bit,
# an Elasticsearch ``_id`` is at most 512 bytes, a keyword term at most 32766 bytes), with
# room to grow. Checked here, at the edge, so a webhook refuses (422) exactly what a
# worker would dead-letter, and a worker never meets a value a store overflows on.
#
# Versions stop at 2**53 - 1: a version at 2**63 - 1 is storable but its next edit is not,
# and 2**53 - 1 is the largest integer every JSON reader keeps exact (JavaScript CMSs,
# float64 metric values), while still holding a millisecond timestamp for 285,000 years.
MAX_VERSION = 2**53 - 1
# What a source may stamp (the webhook payload, the folder's front matter, a change log):
# the top 2**20 versions are kept for the versions the pipeline makes itself above a
# source's (the folder watcher's "one more" after a delete or two edits in one second, the
# Git source's offsets after a force-push), so a document a source stamps at the top of its
# range can still be edited, deleted and re-created. Above it, a source's version is
# refused at the door (422, or the file listed unreadable), never accepted and frozen.
VERSION_HEADROOM = 2**20
MAX_SOURCE_VERSION = MAX_VERSION - VERSION_HEADROOM
# A document id is the ``_id`` of its state and the head of each chunk id
# ``<id>@v<version>#<slug>``: half of the 512 bytes, the rest for ``@v``, 16 digits and a slug.
MAX_DOCUMENT_ID_BYTES = 256
MAX_CONTENT_BYTES = 8 * 1024 * 1024  # below the 11 MiB Kafka record, with room for the JSON
MAX_LABELS = 64  # access labels, keywords or scope values of one document
MAX_LABEL_CHARS = 256  # one label, keyword or scope value
MAX_TEXT_CHARS = 2048  # the title and the source path
# The name of the source a document belongs to (``folder``, ``cms``, ``changelog``, ``git``,
# a webhook adapter's name such as ``contentful``): short, lower case, a metric-label-safe word.
SOURCE_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"


def check_label(value: str) -> str:
    """A label-like value (access label, keyword, scope): non-empty, bounded, no control char.

    Raising ``ValueError`` makes it a field error naming the value's place.
    """
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    if len(value) > MAX_LABEL_CHARS:
        raise ValueError(f"is {len(value)} characters long; at most {MAX_LABEL_CHARS}")
    if _CONTROL.search(value):
        raise ValueError(f"{value[:40]!r} contains a control character")
    utf8_size(value)
    return value


def utf8_size(value: str) -> int:
    """Bytes of ``value`` in UTF-8; ``ValueError`` for a lone surrogate no store can encode."""
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(f"is not valid Unicode (a lone surrogate at {exc.start})") from exc


# Bidirectional controls (Unicode category Cf, named here for the error message): they
# reorder what a log, a terminal or a CMS screen shows, so ``abc\u202edm.`` prints as
# another id.
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                           "\u2066\u2067\u2068\u2069")
# What the published JSON Schemas say of an id (documentation for other producers; the
# authoritative check is ``check_document_id``, which also wants NFC and clean segments).
DOCUMENT_ID_SCHEMA_PATTERN = (
    r"^(?![ /])(?!\.\.?(/|$))(?!.*[ /]$)(?!.*//)(?!.*/\.\.?(/|$))"
    r"[^@#\x00-\x1f\x7f-\x9f\u00a0\u00ad\u061c\u180e\u2000-\u200f\u2028-\u202f"
    r"\u205f-\u206f\u3000\ufeff]+$"
)


def check_document_id(value: str) -> str:
    """A document id every ingress may pass on; ``ValueError`` naming what is wrong.

    An id is a key: of the document's state, of its chunks, of the one-owner check and of
    the source's own listing. Two ids that print alike but differ in code points would be
    two documents, and the second would go round the owner check (a 409) and the version
    guard of the first. So an id is refused, never silently changed, when it has:

    - ``@`` or ``#`` (they separate the parts of a chunk id ``<id>@v<version>#<slug>``),
      more than ``MAX_DOCUMENT_ID_BYTES`` bytes of UTF-8, a lone surrogate;
    - a control character (C0, DEL, C1 such as U+0085), a bidirectional control
      (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) or any other format
      character (Unicode category Cf: zero-width U+200B..U+200D, U+2060, U+FEFF, the soft
      hyphen...);
    - whitespace other than the plain space U+0020 (no-break space, line separator...),
      or a space at either end;
    - a form other than Unicode NFC (``e`` + U+0301 for ``é``): refused, not normalised,
      because the source still names the document by its own code points; an index that
      kept the NFC form would then hold an id its source never lists (the monitor would
      count it deleted at the source, the reconcile would delete it), and its deletion
      would never match. The error gives the NFC form to send instead;
    - an empty, ``.`` or ``..`` path segment: a leading ``/`` or ``./``, a ``/`` at the
      end, ``//``, ``a/./b``, ``a/../b`` (a path spelled another way is another key for
      one file).
    """
    if not value:
        raise ValueError("must not be empty")
    size = utf8_size(value)
    if size > MAX_DOCUMENT_ID_BYTES:
        raise ValueError(f"is {size} bytes in UTF-8; at most {MAX_DOCUMENT_ID_BYTES}")
    for position, char in enumerate(value):
        problem = _id_character_problem(char)
        if problem is not None:
            raise ValueError(f"has {problem}, U+{ord(char):04X}, at character {position}")
    if value != value.strip():
        raise ValueError("must not begin or end with whitespace")
    if not unicodedata.is_normalized("NFC", value):
        nfc = unicodedata.normalize("NFC", value)
        raise ValueError(f"is not in Unicode NFC form (a character written decomposed); "
                         f"send it as {nfc!r}")
    segments = value.split("/")
    if "" in segments:
        raise ValueError("has an empty path segment (a leading or trailing '/', or '//')")
    if "." in segments or ".." in segments:
        raise ValueError("has a '.' or '..' path segment (write the path without it)")
    return value


def _id_character_problem(char: str) -> str | None:
    if char in "@#":
        return f"{char!r}, which separates the parts of a chunk id"
    category = unicodedata.category(char)
    if category == "Cc":
        return "a control character"
    if char in _BIDI_CONTROLS:
        return "a bidirectional control character"
    if category == "Cf":
        return "an invisible format character (Unicode category Cf)"
    if category in ("Zl", "Zp") or (category == "Zs" and char != " "):
        return "whitespace other than a plain space"
    return None


def _check_content(value: str) -> str:
    if "\x00" in value:
        raise ValueError(f"contains NUL at character {value.index(chr(0))}")
    size = utf8_size(value)
    if size > MAX_CONTENT_BYTES:
        raise ValueError(f"is {size} bytes in UTF-8; at most {MAX_CONTENT_BYTES}")
    return value


def _check_text(value: str) -> str:
    if "\x00" in value:
        raise ValueError("contains NUL")
    utf8_size(value)
    return value


Label = Annotated[str, AfterValidator(check_label)]
Labels = Annotated[list[Label], Field(max_length=MAX_LABELS)]
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS), AfterValidator(_check_text)]
Version = Annotated[
    int, Field(ge=1, le=MAX_VERSION, description="Grows per document at the source.")
]
SourceVersion = Annotated[
    int,
    Field(ge=1, le=MAX_SOURCE_VERSION,
          description="Grows per document at the source; at most 2^53 - 1 - 2^20 "
          "(events.model.MAX_SOURCE_VERSION)."),
]
SourceName = Annotated[
    str,
    Field(
        pattern=SOURCE_NAME_PATTERN,
        description="The source that owns the document (docs/hardening.md, one owner per "
        "document). Absent: an unowned event (from before owners), applied without the owner "
        "check and leaving the document's owner as it is.",
    ),
]
DocumentId = Annotated[
    str,
    Field(
        json_schema_extra={"pattern": DOCUMENT_ID_SCHEMA_PATTERN},
        description="The document's key: at most 256 bytes of UTF-8, Unicode NFC, no '@' or "
        "'#', no control, bidirectional or other format (Cf) character, no whitespace but "
        "inner plain spaces, no empty, '.' or '..' segment between '/' "
        "(events.model.check_document_id).",
    ),
    AfterValidator(check_document_id),
]


class Action(StrEnum):
    UPSERT = "upsert"
    DELETE = "delete"


ContentType = Literal["text/markdown", "text/html"]
SCHEMA_VERSION: Literal[1] = 1


class EventMetadata(BaseModel):
    """Document metadata sent with the change; a field left out is not set.

    Set fields win over the document's own front matter.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: Text | None = None
    source_path: Text | None = Field(None, description="Path or URL of the document at the source.")
    scope: Labels | None = None
    valid_from: date | None = None
    valid_to: date | None = None
    effective_date: date | None = None
    access_labels: Labels | None = None
    keywords: Labels | None = None

    def overrides(self) -> dict[str, object]:
        """The fields that were set, by their ``chunker.model.DocumentMetadata`` names."""
        return self.model_dump(exclude_none=True)


class ChangeEvent(BaseModel):
    """One change of one document at the source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = SCHEMA_VERSION
    event_id: str = Field(min_length=1, max_length=200)
    document_id: DocumentId
    action: Action
    version: Version
    changed_at: AwareDatetime = Field(description="When the change happened at the source.")
    received_at: AwareDatetime | None = Field(
        None, description="When the pipeline first received the change."
    )
    content_type: ContentType | None = None
    content: Annotated[str, AfterValidator(_check_content)] | None = None
    metadata: EventMetadata = Field(default_factory=EventMetadata)
    source: SourceName | None = None

    @model_validator(mode="after")
    def _content_matches_action(self) -> Self:
        if self.action is Action.UPSERT:
            if self.content is None:
                raise ValueError("an upsert carries the document's content")
            if self.content_type is None:
                raise ValueError("an upsert carries a content_type")
        elif self.content is not None:
            raise ValueError("a delete carries no content")
        return self

    def to_json_bytes(self) -> bytes:
        return self.model_dump_json(exclude_none=True).encode("utf-8")

    @classmethod
    def from_json_bytes(cls, raw: bytes) -> ChangeEvent:
        """Parse an event; raises ``pydantic.ValidationError`` on bad input."""
        return cls.model_validate_json(raw)
