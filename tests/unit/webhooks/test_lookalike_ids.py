"""A document id that prints like another is refused at every door.

``refunds`` is one document; ``refunds\\u200b`` (a zero-width space), ``refunds\\u0085``
(C1 next line), a right-to-left override, a trailing space, ``./refunds``, ``refunds/``
or ``refunds`` written decomposed would be another key for a reader who sees the same
text, and went round the one-owner 409 of the first. Each is now 422 at its field on
``POST /webhooks/cms`` and at the CMS adapters, and nothing is published.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pydantic
import pytest
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient
from support.cms_signers import sanity_document
from support.webhook_helpers import NOW, SECRET, MemoryPublisher, payload, signed_headers

from events.model import ChangeEvent, check_document_id
from webhooks.adapters import sanity
from webhooks.adapters.base import Adapter
from webhooks.adapters.sanity import SanityAdapter
from webhooks.adapters.strapi import StrapiAdapter
from webhooks.app import create_app
from webhooks.config import WebhookConfig

SANITY_SECRET = "sanity-secret-for-unit-tests-01"
STRAPI_TOKEN = "strapi-token-for-unit-tests-0001"

# (case, id, words the error must say)
LOOKALIKES: list[tuple[str, str, str]] = [
    ("C1 next line U+0085", "refunds\u0085", "control character, U+0085"),
    ("right-to-left override U+202E", "refunds\u202etxt.md", "bidirectional control"),
    ("left-to-right mark U+200E", "refunds\u200e", "bidirectional control"),
    ("zero-width space U+200B", "refunds\u200b", "format character"),
    ("zero-width non-joiner U+200C", "ref\u200cunds", "format character"),
    ("zero-width joiner U+200D", "refunds\u200d", "format character"),
    ("word joiner U+2060", "refunds\u2060", "format character"),
    ("byte order mark U+FEFF", "\ufeffrefunds", "format character"),
    ("no-break space U+00A0", "refunds\u00a0policy", "whitespace other than a plain space"),
    ("trailing space", "refunds ", "begin or end with whitespace"),
    ("leading space", " refunds", "begin or end with whitespace"),
    ("leading ./", "./refunds", "'.' or '..' path segment"),
    ("trailing /", "refunds/", "empty path segment"),
    ("leading /", "/refunds", "empty path segment"),
    ("double /", "refunds//late", "empty path segment"),
    ("a .. segment", "cities/../refunds", "'.' or '..' path segment"),
    ("not NFC (e + U+0301)", "cafe\u0301/refunds", "NFC"),
]
IDS = [case for case, _, _ in LOOKALIKES]
BAD = [pytest.param(bad, words, id=case) for case, bad, words in LOOKALIKES]
# What stays an id: inner spaces, slashes between names, any script in NFC, a dot in a name.
FINE = ["refunds", "terms/privacy", "refund policy", "café/remboursements", "返金/規約",
        "v1.2/notes", ".well-known", "a-b_c~d"]


@pytest.mark.parametrize(("bad", "words"), BAD)
def test_the_validator_names_what_is_wrong(bad: str, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        check_document_id(bad)


@pytest.mark.parametrize("good", FINE)
def test_ids_that_are_plain_names_are_kept_as_they_are(good: str) -> None:
    assert check_document_id(good) == good


@pytest.mark.parametrize(("case", "bad", "words"), LOOKALIKES, ids=IDS)
def test_a_queued_event_with_a_lookalike_id_is_a_schema_error_at_document_id(
    case: str, bad: str, words: str
) -> None:
    """What a worker reads from the queue (or a replay builds) is checked the same way:
    a schema error, the dead letter's reason, at ``document_id``."""
    with pytest.raises(pydantic.ValidationError) as caught:
        ChangeEvent.model_validate({
            "event_id": "e1", "document_id": bad, "action": "delete", "version": 2,
            "changed_at": "2026-11-29T18:04:05Z"})
    assert [e["loc"] for e in caught.value.errors()] == [("document_id",)], case
    assert words in caught.value.errors()[0]["msg"], case


@pytest.fixture
def client(publisher: MemoryPublisher) -> Iterator[TestClient]:
    adapters: list[Adapter] = [
        SanityAdapter([SANITY_SECRET]),
        StrapiAdapter([STRAPI_TOKEN.encode()], api_paths={"policy": "/api/policies"})]
    app = create_app(WebhookConfig(secrets=(SECRET,)), publisher, CollectorRegistry(),
                     clock=lambda: NOW, adapters=adapters)
    with TestClient(app) as client:
        yield client


@pytest.mark.parametrize(("bad", "words"), BAD)
@pytest.mark.parametrize("event_type", ["document.published", "document.deleted"])
def test_the_cms_webhook_refuses_a_lookalike_id_with_422_at_document_id(
    client: TestClient, publisher: MemoryPublisher, bad: str, words: str, event_type: str,
) -> None:
    body = json.dumps(payload(event_type, id=bad)).encode()
    answer = client.post("/webhooks/cms", content=body, headers=signed_headers(body))
    assert answer.status_code == 422, answer.text
    errors = answer.json()["errors"]
    assert [e["loc"] for e in errors] == [["document", "id"]], answer.text
    assert words in errors[0]["msg"], answer.text
    assert publisher.events == []


@pytest.mark.parametrize(("bad", "words"), BAD)
@pytest.mark.parametrize("operation", ["update", "delete"])
def test_the_sanity_adapter_refuses_a_lookalike_id_with_422_at_id(
    client: TestClient, publisher: MemoryPublisher, bad: str, words: str, operation: str,
) -> None:
    body = json.dumps(sanity_document(bad, "2025-11-29T19:50:00.123Z")).encode()
    t_ms = int(NOW * 1000)
    answer = client.post("/webhooks/sanity", content=body, headers={
        "Content-Type": "application/json", "sanity-operation": operation,
        "sanity-webhook-signature": sanity.sign(SANITY_SECRET, t_ms, body)})
    assert answer.status_code == 422, answer.text
    assert [e["loc"] for e in answer.json()["errors"]] == [["_id"]], answer.text
    assert words in answer.json()["detail"], answer.text
    assert publisher.events == []


def test_the_strapi_adapter_refuses_an_id_its_model_and_key_make_lookalike(
    client: TestClient, publisher: MemoryPublisher
) -> None:
    body = json.dumps({"event": "entry.publish", "model": "policy", "createdAt":
                       "2026-11-29T18:04:05.000Z", "entry": {
                           "documentId": "refunds\u200b", "updatedAt": "2026-11-29T18:04:05.000Z",
                           "publishedAt": "2026-11-29T18:04:05.000Z", "body": "# Refunds"}})
    answer = client.post("/webhooks/strapi", content=body.encode(), headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {STRAPI_TOKEN}"})
    assert answer.status_code == 422, answer.text
    assert "U+200B" in answer.json()["detail"]
    assert publisher.events == []


def test_the_plain_id_still_goes_through(client: TestClient, publisher: MemoryPublisher) -> None:
    body = json.dumps(payload(id="refunds")).encode()
    assert client.post("/webhooks/cms", content=body,
                       headers=signed_headers(body)).status_code == 202
    assert [e.document_id for e in publisher.events] == ["refunds"]
