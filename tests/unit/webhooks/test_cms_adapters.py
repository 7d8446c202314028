"""POST /webhooks/contentful, /sanity and /strapi, in-process.

Requests signed by the vendors' own libraries (``@contentful/node-apps-toolkit``,
``@sanity/webhook``, from npm) and Strapi's token are accepted and become the
right change events; the same request with any byte of the body changed, a
wrong or stale signature, an unknown event type or a malformed body gets its
documented status, and nothing is published.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient
from support.cms_signers import (
    contentful_entry,
    contentful_headers,
    contentful_rich_text,
    contentful_tombstone,
    sanity_document,
    sanity_headers,
    strapi_blocks,
    strapi_event,
)
from support.webhook_helpers import NOW, MemoryPublisher

from events.model import Action
from webhooks.adapters.base import Adapter, Unauthorized, WebhookRequest
from webhooks.adapters.contentful import ContentfulAdapter
from webhooks.adapters.sanity import SanityAdapter
from webhooks.adapters.strapi import StrapiAdapter
from webhooks.app import create_app

CONTENTFUL = "cf" + "0123456789abcdef" * 3 + "ContentfulKeyX"  # 64 characters
CONTENTFUL_OLD = "old" + "x" * 61
SANITY = "sanity-secret-for-unit-tests-01"
SANITY_OLD = "sanity-secret-being-rotated-002"
STRAPI = "strapi-token-for-unit-tests-0001"
NOW_MS = int(NOW * 1000)


def ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


@pytest.fixture
def client(publisher: MemoryPublisher) -> Iterator[TestClient]:
    adapters: list[Adapter] = [
        ContentfulAdapter([CONTENTFUL, CONTENTFUL_OLD], content_types=["policy"]),
        SanityAdapter([SANITY, SANITY_OLD]),
        StrapiAdapter([STRAPI.encode()], api_paths={"policy": "/api/policies"})]
    app = create_app(None, publisher, CollectorRegistry(), clock=lambda: NOW, adapters=adapters)
    with TestClient(app) as client:
        yield client


def failures(client: TestClient, reason: str) -> float:
    """``policy_indexer_webhook_signature_failures_total{reason}`` as the receiver exports it."""
    prefix = f'policy_indexer_webhook_signature_failures_total{{reason="{reason}"}} '
    lines = [line for line in client.get("/metrics").text.splitlines()
             if line.startswith(prefix)]
    return float(lines[0].removeprefix(prefix)) if lines else 0.0


def encode(value: Any) -> bytes:
    return json.dumps(value, indent=1).encode()


# Sanity ---------------------------------------------------------------------

def test_sanity_requests_signed_by_sanity_webhook_are_upserts_and_deletes(
    client: TestClient, publisher: MemoryPublisher
) -> None:
    body = encode(sanity_document("policy-deliveries", "2025-11-29T19:50:00.123Z"))
    answer = client.post("/webhooks/sanity", content=body,
                         headers=sanity_headers(body, SANITY, NOW_MS - 2000, "update"))
    assert answer.status_code == 202, answer.text
    (event,) = publisher.events
    assert (event.document_id, event.action) == ("policy-deliveries", Action.UPSERT)
    assert event.version == ms("2025-11-29T19:50:00.123Z")
    assert event.content is not None and "## Late deliveries" in event.content
    meta = event.metadata
    assert (meta.title, meta.scope, meta.access_labels) == ("Deliveries", ["city:porto"],
                                                           ["agents", "tier2"])
    assert (str(meta.valid_from), str(meta.valid_to)) == ("2026-12-01", "2027-06-30")
    # a delete: the body is the document as it was; the version is the send time, later
    answer = client.post("/webhooks/sanity", content=body,
                         headers=sanity_headers(body, SANITY_OLD, NOW_MS, "delete"))
    assert answer.status_code == 202, answer.text
    deleted = publisher.events[1]
    assert (deleted.action, deleted.version) == (Action.DELETE, NOW_MS)
    assert deleted.version > event.version


def test_sanity_any_byte_changed_is_refused() -> None:
    adapter = SanityAdapter([SANITY])
    body = encode(sanity_document("p", "2025-11-29T19:50:00Z"))
    headers = {k.lower(): v for k, v in sanity_headers(body, SANITY, NOW_MS).items()}
    adapter.authenticate(WebhookRequest(headers, body, NOW))
    for position in range(len(body)):
        tampered = bytearray(body)
        tampered[position] ^= 0x01
        with pytest.raises(Unauthorized) as caught:
            adapter.authenticate(WebhookRequest(headers, bytes(tampered), NOW))
        assert caught.value.reason == "mismatch"


@pytest.mark.parametrize(("change", "reason"), [
    ({"sanity-webhook-signature": None}, "missing"),
    ({"sanity-webhook-signature": "v1=abc,t=1"}, "malformed"),
    ("stale", "stale"),
    ("future", "stale"),
    ("wrong-secret", "mismatch"),
])
def test_sanity_bad_signatures_are_401_and_publish_nothing(
    client: TestClient, publisher: MemoryPublisher, change: Any, reason: str
) -> None:
    body = encode(sanity_document("p", "2025-11-29T19:50:00Z"))
    t_ms = {"stale": NOW_MS - 301_000, "future": NOW_MS + 301_000}.get(str(change), NOW_MS)
    secret = "another-secret-of-enough-bytes" if change == "wrong-secret" else SANITY
    headers: dict[str, Any] = sanity_headers(body, secret, t_ms)
    if isinstance(change, dict):
        headers.update(change)
    sent = {k: v for k, v in headers.items() if v is not None}
    answer = client.post("/webhooks/sanity", content=body, headers=sent)
    assert answer.status_code == 401, answer.text
    assert failures(client, reason) == 1
    assert publisher.events == []


# 100,000 levels of arrays in 200 kB: the decoder runs out of stack (a 500 before).
DEEP = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


@pytest.mark.parametrize(("body", "operation", "status", "expected"), [
    (b"{not json", "update", 400, "invalid_json"),
    (b"[1, 2]", "update", 400, "invalid_json"),
    (DEEP, "update", 400, "nested too deeply"),
    (encode({"_type": "policy", "_updatedAt": "2025-11-29T19:50:00Z"}), "update", 422, "_id"),
    (encode({"_id": "p", "title": "x", "body": "# x", "_updatedAt": "yesterday"}), "update",
     422, "_updatedAt"),
    (encode(sanity_document("drafts.p", "2025-11-29T19:50:00Z")), "update", 202, "draft"),
    (encode(sanity_document("p", "2025-11-29T19:50:00Z")), "publish", 202, "is not create"),
    # the header is not signed; an operation in the (signed) body wins, and must agree
    (encode({**sanity_document("p", "2025-11-29T19:50:00Z"), "operation": "update"}), "delete",
     422, "contradicts"),
])
def test_sanity_bad_or_foreign_bodies_get_their_status_and_publish_nothing(
    client: TestClient, publisher: MemoryPublisher, *, body: bytes, operation: str,
    status: int, expected: str
) -> None:
    answer = client.post("/webhooks/sanity", content=body,
                         headers=sanity_headers(body, SANITY, NOW_MS, operation))
    assert answer.status_code == status, answer.text
    assert expected in answer.text
    assert publisher.events == []


# Contentful -----------------------------------------------------------------

def test_contentful_requests_signed_by_the_toolkit_publish_and_unpublish(
    client: TestClient, publisher: MemoryPublisher
) -> None:
    published = "2025-11-29T19:40:00.250Z"
    body = encode(contentful_entry("5KsDBWseXY6QegucYAoacS", contentful_rich_text(),
                                   updated=published))
    answer = client.post("/webhooks/contentful", content=body, headers=contentful_headers(
        body, CONTENTFUL, NOW_MS - 1000, "ContentManagement.Entry.publish"))
    assert answer.status_code == 202, answer.text
    (event,) = publisher.events
    assert (event.document_id, event.action, event.version) == (
        "5KsDBWseXY6QegucYAoacS", Action.UPSERT, ms(published))
    assert event.content is not None and event.content.startswith("# Refunds\n")
    assert "## Eligibility" in event.content
    assert (event.metadata.title, event.metadata.scope, event.metadata.access_labels) == (
        "Refunds", ["city:lisbon"], ["agents"])
    body = encode(contentful_tombstone("5KsDBWseXY6QegucYAoacS", "2025-11-29T19:59:00.000Z"))
    answer = client.post("/webhooks/contentful", content=body, headers=contentful_headers(
        body, CONTENTFUL_OLD, NOW_MS, "ContentManagement.Entry.unpublish"))
    assert answer.status_code == 202, answer.text
    gone = publisher.events[1]
    assert (gone.action, gone.version) == (Action.DELETE, ms("2025-11-29T19:59:00.000Z"))
    assert gone.version > event.version


def test_contentful_any_byte_of_the_body_or_a_signed_header_changed_is_refused() -> None:
    adapter = ContentfulAdapter([CONTENTFUL])
    body = encode(contentful_entry("e1", contentful_rich_text(), updated="2025-11-29T19:40:00Z"))
    headers = {k.lower(): v for k, v in contentful_headers(
        body, CONTENTFUL, NOW_MS, "ContentManagement.Entry.publish").items()}
    adapter.authenticate(WebhookRequest(headers, body, NOW))
    for position in range(len(body)):
        tampered = bytearray(body)
        tampered[position] ^= 0x01
        with pytest.raises(Unauthorized):
            adapter.authenticate(WebhookRequest(headers, bytes(tampered), NOW))
    for name in ("x-contentful-topic", "x-contentful-webhook-name", "x-contentful-timestamp"):
        changed = {**headers, name: headers[name][:-1] + "9"}
        with pytest.raises(Unauthorized):
            adapter.authenticate(WebhookRequest(changed, body, NOW))
    # signed for another path (a webhook URL not ours)
    other = {k.lower(): v for k, v in contentful_headers(
        body, CONTENTFUL, NOW_MS, "ContentManagement.Entry.publish", path="/hooks/x").items()}
    with pytest.raises(Unauthorized):
        adapter.authenticate(WebhookRequest(other, body, NOW))


@pytest.mark.parametrize(("change", "reason"), [
    ({"x-contentful-signature": None}, "missing"),
    ({"x-contentful-timestamp": None}, "missing"),
    ({"x-contentful-signature": "Z" * 64}, "malformed"),
    ({"x-contentful-signed-headers": "x-contentful-topic"}, "malformed"),
    ({"x-contentful-signed-headers": "x-contentful-signed-headers,x-contentful-timestamp,"
                                     "x-absent"}, "malformed"),
    ("stale", "stale"),
    ("wrong-secret", "mismatch"),
])
def test_contentful_bad_signatures_are_401_and_publish_nothing(
    client: TestClient, publisher: MemoryPublisher, change: Any, reason: str
) -> None:
    body = encode(contentful_entry("e1", contentful_rich_text(), updated="2025-11-29T19:40:00Z"))
    t_ms = NOW_MS - 301_000 if change == "stale" else NOW_MS
    secret = "w" * 64 if change == "wrong-secret" else CONTENTFUL
    headers: dict[str, Any] = contentful_headers(body, secret, t_ms,
                                                 "ContentManagement.Entry.publish")
    if isinstance(change, dict):
        headers.update(change)
    answer = client.post("/webhooks/contentful", content=body,
                         headers={k: v for k, v in headers.items() if v is not None})
    assert answer.status_code == 401, answer.text
    assert failures(client, reason) == 1
    assert publisher.events == []


@pytest.mark.parametrize(("topic", "body", "status", "expected"), [
    ("ContentManagement.Entry.save", None, 202, "only Entry publish"),
    ("ContentManagement.Asset.publish", None, 202, "only Entry publish"),
    ("ContentManagement.Entry.publish", b"{oops", 400, "invalid_json"),
    ("ContentManagement.Entry.publish", DEEP, 400, "nested too deeply"),
    ("ContentManagement.Entry.publish", encode({"sys": {"type": "Entry"}}), 422, "sys.id"),
    ("ContentManagement.Entry.publish", "other-type", 202, "content type"),
    ("ContentManagement.Entry.publish", "no-fields", 422, "no Contentful Delivery API"),
    # a publish body sent with another topic (the topic header may be unsigned)
    ("ContentManagement.Entry.unpublish", None, 422, "want 'DeletedEntry'"),
])
def test_contentful_foreign_topics_and_bad_bodies_get_their_status_and_publish_nothing(
    client: TestClient, publisher: MemoryPublisher, *, topic: str, body: Any, status: int,
    expected: str
) -> None:
    entry = contentful_entry("e1", contentful_rich_text(), updated="2025-11-29T19:40:00Z")
    if body == "other-type":
        entry["sys"]["contentType"]["sys"]["id"] = "blogPost"
    if body == "no-fields":
        del entry["fields"]
    raw = body if isinstance(body, bytes) else encode(entry)
    answer = client.post("/webhooks/contentful", content=raw,
                         headers=contentful_headers(raw, CONTENTFUL, NOW_MS, topic))
    assert answer.status_code == status, answer.text
    assert expected in answer.text
    assert publisher.events == []


# Strapi ---------------------------------------------------------------------

def strapi_headers(token: str = STRAPI) -> dict[str, str]:
    return {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}


def test_strapi_with_its_token_publishes_unpublishes_and_deletes(
    client: TestClient, publisher: MemoryPublisher
) -> None:
    updated = "2025-11-29T19:30:00.500Z"
    body = encode(strapi_event("entry.publish", "k3xm9q", updated, body=strapi_blocks()))
    answer = client.post("/webhooks/strapi", content=body, headers=strapi_headers())
    assert answer.status_code == 202, answer.text
    (event,) = publisher.events
    assert (event.document_id, event.action, event.version) == (
        "policy/k3xm9q", Action.UPSERT, ms(updated))
    assert event.content is not None and "## Claims" in event.content
    assert event.metadata.scope == ["city:berlin", "city:hamburg"]
    # Markdown rich text (Strapi's "Rich text (Markdown)" field) goes as it is
    body = encode(strapi_event("entry.update", "k3xm9q", "2025-11-29T19:31:00Z",
                               body="# Warranty\n\n## Claims\n\nThree years.\n"))
    assert client.post("/webhooks/strapi", content=body,
                       headers=strapi_headers()).status_code == 202
    assert publisher.events[1].content == "# Warranty\n\n## Claims\n\nThree years.\n"
    # a delete carries the entry as it was: its version is the event's createdAt
    body = encode(strapi_event("entry.delete", "k3xm9q", "2025-11-29T19:31:00Z",
                               created="2025-11-29T19:45:00Z"))
    assert client.post("/webhooks/strapi", content=body,
                       headers=strapi_headers()).status_code == 202
    deleted = publisher.events[2]
    assert (deleted.action, deleted.version) == (Action.DELETE, ms("2025-11-29T19:45:00Z"))


@pytest.mark.parametrize(("headers", "reason"), [
    ({"Content-Type": "application/json"}, "missing"),
    ({"Content-Type": "application/json", "Authorization": STRAPI}, "malformed"),
    ({"Content-Type": "application/json", "Authorization": "Bearer "}, "malformed"),
    (strapi_headers("strapi-token-for-unit-tests-0002"), "mismatch"),
    (strapi_headers(STRAPI + "x"), "mismatch"),
])
def test_strapi_without_its_token_is_401_and_publishes_nothing(
    client: TestClient, publisher: MemoryPublisher, headers: dict[str, str], reason: str
) -> None:
    body = encode(strapi_event("entry.publish", "k3xm9q", "2025-11-29T19:30:00Z", body="# x"))
    answer = client.post("/webhooks/strapi", content=body, headers=headers)
    assert answer.status_code == 401, answer.text
    assert failures(client, reason) == 1
    assert publisher.events == []


@pytest.mark.parametrize(("body", "status", "expected"), [
    (b"not json", 400, "invalid_json"),
    (DEEP, 400, "nested too deeply"),
    (encode({"event": "entry.publish", "model": "policy"}), 422, "entry"),
    (encode(strapi_event("media.create", "m1", "2025-11-29T19:30:00Z")), 202, "media.create"),
    (encode(strapi_event("entry.update", "k3", "2025-11-29T19:30:00Z", body="# x",
                         published=False)), 202, "draft"),
    (encode({**strapi_event("entry.publish", "k3", "2025-11-29T19:30:00Z", body="# x"),
             "model": "article"}), 202, "not one of the library"),
    (encode(strapi_event("entry.publish", "k3", "2025-11-29T19:30:00Z", body=7)), 422, "body"),
])
def test_strapi_bad_or_foreign_bodies_get_their_status_and_publish_nothing(
    client: TestClient, publisher: MemoryPublisher, body: bytes, status: int, expected: str
) -> None:
    answer = client.post("/webhooks/strapi", content=body, headers=strapi_headers())
    assert answer.status_code == status, answer.text
    assert expected in answer.text
    assert publisher.events == []


def test_content_types_other_than_json_are_415(client: TestClient,
                                               publisher: MemoryPublisher) -> None:
    for route in ("/webhooks/contentful", "/webhooks/sanity", "/webhooks/strapi"):
        answer = client.post(route, content=b"{}", headers={"Content-Type": "text/plain"})
        assert answer.status_code == 415, (route, answer.text)
    assert publisher.events == []


def test_sanity_operation_in_the_signed_body_serves_without_the_header(
    client: TestClient, publisher: MemoryPublisher
) -> None:
    body = encode({**sanity_document("p", "2025-11-29T19:50:00Z"), "operation": "create"})
    headers = sanity_headers(body, SANITY, NOW_MS)
    del headers["sanity-operation"]
    answer = client.post("/webhooks/sanity", content=body, headers=headers)
    assert answer.status_code == 202, answer.text
    assert [e.action for e in publisher.events] == [Action.UPSERT]
