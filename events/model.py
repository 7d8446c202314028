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
from typing import Literal, Self

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

# '@' and '#' separate the parts of a chunk id; control characters break logs.
_DOCUMENT_ID = re.compile(r"^[^@#\x00-\x1f\x7f]{1,512}$")


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

    title: str | None = None
    source_path: str | None = Field(None, description="Path or URL of the document at the source.")
    scope: list[str] | None = None
    valid_from: date | None = None
    valid_to: date | None = None
    effective_date: date | None = None
    access_labels: list[str] | None = None
    keywords: list[str] | None = None

    def overrides(self) -> dict[str, object]:
        """The fields that were set, by their ``chunker.model.DocumentMetadata`` names."""
        return self.model_dump(exclude_none=True)


class ChangeEvent(BaseModel):
    """One change of one document at the source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = SCHEMA_VERSION
    event_id: str = Field(min_length=1, max_length=200)
    document_id: str = Field(pattern=_DOCUMENT_ID.pattern)
    action: Action
    version: int = Field(ge=1, description="Grows per document at the source.")
    changed_at: AwareDatetime = Field(description="When the change happened at the source.")
    received_at: AwareDatetime | None = Field(
        None, description="When the pipeline first received the change."
    )
    content_type: ContentType | None = None
    content: str | None = None
    metadata: EventMetadata = Field(default_factory=EventMetadata)

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
