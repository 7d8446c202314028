"""The change event: one schema for every transport (Kafka, the local queue, replays).

A change event says that a document changed at the source: it was upserted
(with its whole content) or deleted. ``version`` grows per document at the
source; the worker's version guard uses it to keep the index from going back
in time. The JSON Schema in ``events/change-event.schema.json`` is generated
from this model (``python -m events.schema``) and checked by a test.
"""

from __future__ import annotations

import re
from datetime import date
from enum import StrEnum
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator

# '@' and '#' separate the parts of a chunk id; control characters break logs.
_DOCUMENT_ID = re.compile(r"^[^@#\x00-\x1f\x7f]{1,512}$")
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


def _check_document_id(value: str) -> str:
    size = utf8_size(value)
    if size > MAX_DOCUMENT_ID_BYTES:
        raise ValueError(f"is {size} bytes in UTF-8; at most {MAX_DOCUMENT_ID_BYTES}")
    return value


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
    str, Field(pattern=_DOCUMENT_ID.pattern), AfterValidator(_check_document_id)
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
