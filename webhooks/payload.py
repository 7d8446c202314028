"""The CMS webhook payload (version 1) and its translation into a change event.

The payload is what the CMS sends; ``events.model.ChangeEvent`` is what the
pipeline carries. Keeping them apart lets the CMS contract stay stable while
the event grows. The JSON Schema in ``docs/webhook-payload.schema.json`` is
generated from these models (``python -m webhooks.schema``) and checked by a
test, so the published schema cannot drift from the code.

Models are strict: ``"version": "3"`` or ``"version": true`` is refused rather
than coerced, because a CMS sending that has a bug worth hearing about.
"""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from events.model import (
    Action,
    ChangeEvent,
    ContentType,
    DocumentId,
    EventMetadata,
    Labels,
    SourceVersion,
    Text,
)

PAYLOAD_VERSION: Literal[1] = 1


class EventType(StrEnum):
    PUBLISHED = "document.published"
    UPDATED = "document.updated"
    DELETED = "document.deleted"


ACTION_OF: dict[EventType, Action] = {
    EventType.PUBLISHED: Action.UPSERT,
    EventType.UPDATED: Action.UPSERT,
    EventType.DELETED: Action.DELETE,
}

# The rule ``_content_matches_event_type`` enforces, stated in the published schema.
_CONTENT_RULE: dict[str, Any] = {
    "if": {"required": ["event_type"],
           "properties": {"event_type": {"const": "document.deleted"}}},
    "then": {"properties": {"document": {"properties": {
        "content": {"type": "null"}, "content_type": {"type": "null"}}}}},
    "else": {"properties": {"document": {
        "required": ["content", "content_type"],
        "properties": {"content": {"type": "string"}, "content_type": {"type": "string"}}}}},
}

_STRICT = ConfigDict(frozen=True, extra="forbid", strict=True)


class DocumentMetadata(BaseModel):
    """Metadata of the document; a field left out is not set (the document's front matter may)."""

    model_config = _STRICT

    # The change event's own types: a value a worker would dead-letter is refused here, at
    # its place in the payload.
    scope: Labels | None = Field(None, description="Where the policy applies, e.g. cities.")
    valid_from: date | None = None
    valid_to: date | None = None
    effective_date: date | None = None
    access_labels: Labels | None = Field(
        None, description="Permission labels a reader needs to see this document."
    )
    keywords: Labels | None = None


class Document(BaseModel):
    """The document as it is at the CMS after the change."""

    model_config = _STRICT

    id: DocumentId = Field(min_length=1, description="Stable document id at the CMS.")
    version: SourceVersion = Field(description="Grows with every change of this document; "
                                   "at most 2^53 - 1 - 2^20.")
    title: Text | None = None
    path: Text | None = Field(None, description="Path or URL of the document at the CMS.")
    content_type: ContentType | None = Field(
        None, description="Required for published and updated; absent for deleted."
    )
    content: str | None = Field(
        None, description="Whole content; required for published and updated, absent for deleted."
    )
    metadata: DocumentMetadata = Field(default_factory=DocumentMetadata)


class WebhookPayload(BaseModel):
    """One change at the CMS, as ``POST /webhooks/cms`` receives it."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        title="CMS webhook payload",
        json_schema_extra={"allOf": [_CONTENT_RULE]},
    )

    payload_version: Literal[1] = Field(description="Version of this payload format.")
    event_id: str = Field(
        min_length=1, max_length=200, description="Unique per change; a retry reuses it."
    )
    event_type: EventType
    occurred_at: AwareDatetime = Field(description="When the change happened at the CMS.")
    document: Document

    @model_validator(mode="after")
    def _content_matches_event_type(self) -> Self:
        doc = self.document
        if self.event_type is EventType.DELETED:
            if doc.content is not None or doc.content_type is not None:
                raise ValueError("a document.deleted event carries no document.content(_type)")
        else:
            missing = [f for f in ("content", "content_type") if getattr(doc, f) is None]
            if missing:
                fields = ", ".join(f"document.{f}" for f in missing)
                raise ValueError(f"a {self.event_type.value} event needs {fields}")
        return self

    def to_change_event(self, received_at: datetime, *, source: str = "cms") -> ChangeEvent:
        """The change event the pipeline carries; raises ``pydantic.ValidationError``.

        ``source``: the owner stamped on the event. The CMS route and the Standard
        Webhooks adapter both carry this payload, from the CMS the ``cms`` source lists.
        """
        doc = self.document
        meta = doc.metadata
        return ChangeEvent(
            event_id=self.event_id,
            document_id=doc.id,
            action=ACTION_OF[self.event_type],
            version=doc.version,
            changed_at=self.occurred_at,
            received_at=received_at,
            content_type=doc.content_type,
            content=doc.content,
            metadata=EventMetadata(
                title=doc.title,
                source_path=doc.path,
                scope=meta.scope,
                valid_from=meta.valid_from,
                valid_to=meta.valid_to,
                effective_date=meta.effective_date,
                access_labels=meta.access_labels,
                keywords=meta.keywords,
            ),
            source=source,
        )


# Where a change-event field comes from in the payload, to report its errors there.
EVENT_FIELD_TO_PAYLOAD: dict[str, tuple[str, ...]] = {
    "event_id": ("event_id",),
    "document_id": ("document", "id"),
    "action": ("event_type",),
    "version": ("document", "version"),
    "changed_at": ("occurred_at",),
    "content_type": ("document", "content_type"),
    "content": ("document", "content"),
    "metadata": ("document", "metadata"),
}
