"""When a CMS payload lacks the content or the metadata, the adapter reads the document
from the CMS's read API (a small HTTP server of the test's own, on loopback, answering
recorded-shape responses): with the token, through the field mapping; an API that fails is
a 503 (the CMS retries) and a document gone is 202 ignored, nothing published."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

import pytest
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient
from support.cms_api import FakeCmsApi, serve_cms_api
from support.cms_signers import (
    contentful_entry,
    contentful_headers,
    contentful_rich_text,
    portable_text,
    sanity_headers,
    strapi_blocks,
)
from support.webhook_helpers import NOW, MemoryPublisher

from events.model import Action
from webhooks.adapters.base import Adapter
from webhooks.adapters.cms_common import DeliveryApi, FieldMapping
from webhooks.adapters.contentful import ContentfulAdapter
from webhooks.adapters.sanity import SanityAdapter
from webhooks.adapters.strapi import StrapiAdapter
from webhooks.app import create_app

CONTENTFUL = "k" * 64
SANITY = "sanity-secret-for-fetch-tests-1"
STRAPI = b"strapi-token-for-fetch-tests-01"
NOW_MS = int(NOW * 1000)


def ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


@pytest.fixture
def api() -> Iterator[FakeCmsApi]:
    with serve_cms_api(FakeCmsApi()) as running:
        yield running


@pytest.fixture
def client(api: FakeCmsApi, publisher: MemoryPublisher) -> Iterator[TestClient]:
    def read_api(cms: str) -> DeliveryApi:
        return DeliveryApi(cms, api.url, token=f"{cms}-read-token", timeout_seconds=5)

    adapters: list[Adapter] = [
        ContentfulAdapter([CONTENTFUL], api=read_api("contentful"), locale="de-DE",
                          mapping=FieldMapping(body="text", title="name")),
        SanityAdapter([SANITY], api=read_api("sanity"), dataset="production",
                      mapping=FieldMapping(body="content", scope="market.cities",
                                           access_labels="audience")),
        StrapiAdapter([STRAPI], api=read_api("strapi"), api_paths={"policy": "/api/policies"})]
    app = create_app(None, publisher, CollectorRegistry(), clock=lambda: NOW, adapters=adapters)
    with TestClient(app) as client:
        yield client


def test_sanity_projection_without_the_body_fetches_the_document_with_the_token(
    client: TestClient, api: FakeCmsApi, publisher: MemoryPublisher
) -> None:
    api.routes["/v2021-06-07/data/doc/production/policy-returns"] = (200, {
        "documents": [{"_id": "policy-returns", "_type": "policy", "_rev": "xR3v",
                       "_updatedAt": "2025-11-29T19:55:01.042Z", "title": "Returns",
                       "content": portable_text(), "market": {"cities": ["city:porto"]},
                       "audience": "agents, tier2"}], "omitted": []})
    body = json.dumps({"_id": "policy-returns", "_type": "policy"}).encode()
    answer = client.post("/webhooks/sanity", content=body,
                         headers=sanity_headers(body, SANITY, NOW_MS, "update"))
    assert answer.status_code == 202, answer.text
    (event,) = publisher.events
    assert event.version == ms("2025-11-29T19:55:01.042Z")
    assert event.content is not None and "## Lost parcels" in event.content
    assert event.metadata.scope == ["city:porto"]
    assert event.metadata.access_labels == ["agents", "tier2"]
    path, headers = api.requests[-1]
    assert path == "/v2021-06-07/data/doc/production/policy-returns"
    assert headers["authorization"] == "Bearer sanity-read-token"


def test_contentful_custom_payload_without_fields_fetches_the_entry_in_the_locale(
    client: TestClient, api: FakeCmsApi, publisher: MemoryPublisher
) -> None:
    entry = contentful_entry("4BqrajvA8E", contentful_rich_text(), updated="2025-11-29T19:50Z")
    delivered = {"sys": {**entry["sys"], "revision": 3, "updatedAt": "2025-11-29T19:51:00Z"},
                 "fields": {"name": "Erstattungen", "text": contentful_rich_text()}}
    del delivered["sys"]["publishedAt"]
    api.routes["/spaces/yadj1kx9rmg0/environments/master/entries/4BqrajvA8E"] = (200, delivered)
    body = json.dumps({"sys": entry["sys"]}).encode()
    answer = client.post("/webhooks/contentful", content=body, headers=contentful_headers(
        body, CONTENTFUL, NOW_MS, "ContentManagement.Entry.publish"))
    assert answer.status_code == 202, answer.text
    (event,) = publisher.events
    assert (event.version, event.metadata.title) == (ms("2025-11-29T19:51:00Z"), "Erstattungen")
    assert event.content is not None and "## Exceptions" in event.content
    path, headers = api.requests[-1]
    assert path.endswith("/entries/4BqrajvA8E?locale=de-DE")
    assert headers["authorization"] == "Bearer contentful-read-token"


def test_strapi_entry_without_the_body_is_read_with_populate(
    client: TestClient, api: FakeCmsApi, publisher: MemoryPublisher
) -> None:
    api.routes["/api/policies/z9q1"] = (200, {"data": {
        "id": 4, "documentId": "z9q1", "title": "Warranty", "body": strapi_blocks(),
        "updatedAt": "2025-11-29T19:20:00.000Z", "publishedAt": "2025-11-29T19:20:00.100Z"},
        "meta": {}})
    body = json.dumps({"event": "entry.publish", "createdAt": "2025-11-29T19:20:01Z",
                       "model": "policy", "entry": {"id": 4, "documentId": "z9q1",
                                                    "updatedAt": "2025-11-29T19:20:00Z"}}).encode()
    answer = client.post("/webhooks/strapi", content=body, headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + STRAPI.decode()})
    assert answer.status_code == 202, answer.text
    (event,) = publisher.events
    assert (event.document_id, event.action) == ("policy/z9q1", Action.UPSERT)
    assert event.version == ms("2025-11-29T19:20:00.100Z")
    assert event.content is not None and "## Claims" in event.content
    assert api.requests[-1][0] == "/api/policies/z9q1?populate=%2A"


@pytest.mark.parametrize(("status", "answer", "expected"), [
    (500, {"error": "boom"}, 503),
    (401, {"error": "bad token"}, 503),
    (200, b"<html>not json</html>", 503),
    (404, {"error": "gone"}, 202),
])
def test_an_api_that_fails_is_503_and_a_document_gone_is_ignored(
    client: TestClient, api: FakeCmsApi, publisher: MemoryPublisher, *, status: int,
    answer: object, expected: int
) -> None:
    api.routes["/v2021-06-07/data/doc/production/p1"] = (status, answer)
    body = json.dumps({"_id": "p1"}).encode()
    reply = client.post("/webhooks/sanity", content=body,
                        headers=sanity_headers(body, SANITY, NOW_MS, "create"))
    assert reply.status_code == expected, reply.text
    if expected == 503:
        assert reply.headers["Retry-After"] == "5"
    else:
        assert reply.json()["status"] == "ignored"
    assert publisher.events == []


def test_an_api_that_cannot_be_reached_is_503(publisher: MemoryPublisher) -> None:
    with serve_cms_api(FakeCmsApi()) as gone:
        url = gone.url  # the port is closed once the server stops
    adapter = SanityAdapter([SANITY], api=DeliveryApi("sanity", url, timeout_seconds=2),
                            dataset="production")
    app = create_app(None, publisher, CollectorRegistry(), clock=lambda: NOW,
                     adapters=[adapter])
    body = json.dumps({"_id": "p1"}).encode()
    with TestClient(app) as client:
        reply = client.post("/webhooks/sanity", content=body,
                            headers=sanity_headers(body, SANITY, NOW_MS, "create"))
    assert reply.status_code == 503, reply.text
    assert "cannot be reached" in reply.text
    assert publisher.events == []
