"""The version-1 payload: what the CMS may send, and the change event it becomes."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any

import pytest
from pydantic import ValidationError
from support.webhook_helpers import payload

from events.model import Action, ChangeEvent
from webhooks.payload import WebhookPayload
from webhooks.schema import EXAMPLE_PATH, SCHEMA_PATH, schema_text

RECEIVED = datetime(2026, 11, 29, 20, 0, tzinfo=UTC)


def test_published_and_updated_become_upserts_with_every_field_carried() -> None:
    for event_type in ("document.published", "document.updated"):
        sent = payload(event_type)
        event = WebhookPayload.model_validate_json(json.dumps(sent)).to_change_event(RECEIVED)
        doc = sent["document"]
        assert event == ChangeEvent(
            event_id=sent["event_id"],
            document_id=doc["id"],
            action=Action.UPSERT,
            version=doc["version"],
            changed_at=datetime(2026, 11, 29, 18, 4, 5, tzinfo=UTC),
            received_at=RECEIVED,
            content_type="text/markdown",
            content=doc["content"],
            metadata={
                "title": doc["title"],
                "source_path": doc["path"],
                "scope": ["city:berlin"],
                "access_labels": ["agents"],
                "valid_from": date(2026, 12, 1),
                "keywords": ["refund"],
            },
            source="cms",  # the owner: the CMS the ``cms`` source lists
        )


def test_deleted_becomes_a_delete_without_content() -> None:
    sent = json.dumps(payload("document.deleted"))
    event = WebhookPayload.model_validate_json(sent).to_change_event(RECEIVED)
    assert event.action is Action.DELETE
    assert event.content is None
    assert event.version == 4


def _errors(data: dict[str, Any]) -> list[tuple[tuple[int | str, ...], str]]:
    with pytest.raises(ValidationError) as info:
        WebhookPayload.model_validate_json(json.dumps(data))
    return [(tuple(e["loc"]), e["type"]) for e in info.value.errors()]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"version": -1}, (("document", "version"), "greater_than_equal")),
        ({"version": 0}, (("document", "version"), "greater_than_equal")),
        ({"version": "3"}, (("document", "version"), "int_type")),
        ({"version": True}, (("document", "version"), "int_type")),
        ({"id": ""}, (("document", "id"), "string_too_short")),
        ({"content_type": "application/pdf"}, (("document", "content_type"), "literal_error")),
        ({"colour": "red"}, (("document", "colour"), "extra_forbidden")),
        ({"metadata": {"valid_from": "next week"}},
         (("document", "metadata", "valid_from"), "date_parsing")),
    ],
)
def test_bad_document_fields_are_named(change: dict[str, Any], expected: Any) -> None:
    assert expected in _errors(payload(**change))


def test_missing_fields_are_each_named() -> None:
    data = payload()
    del data["event_id"], data["occurred_at"]
    del data["document"]["version"]
    found = _errors(data)
    for loc in [("event_id",), ("occurred_at",), ("document", "version")]:
        assert (loc, "missing") in found


def test_unknown_event_type_and_payload_version_are_refused() -> None:
    data = payload()
    data["event_type"] = "document.archived"
    data["payload_version"] = 2
    found = dict(_errors(data))
    assert found[("event_type",)] == "enum"
    assert found[("payload_version",)] == "literal_error"


def test_a_time_without_zone_is_refused() -> None:
    data = payload()
    data["occurred_at"] = "2026-11-29T18:04:05"
    assert (("occurred_at",), "timezone_aware") in _errors(data)


def test_content_must_match_the_event_type() -> None:
    upsert = payload()
    del upsert["document"]["content"]
    deleted = payload("document.deleted", content="old text")
    for data, needle in [(upsert, "needs document.content"), (deleted, "carries no document")]:
        with pytest.raises(ValidationError, match=needle):
            WebhookPayload.model_validate_json(json.dumps(data))


def test_published_schema_is_up_to_date() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == schema_text(), (
        "docs/webhook-payload.schema.json is stale: run `python -m webhooks.schema`"
    )


def test_published_example_is_a_valid_payload() -> None:
    example = WebhookPayload.model_validate_json(EXAMPLE_PATH.read_bytes())
    assert example.to_change_event(RECEIVED).action is Action.UPSERT
