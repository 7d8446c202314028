"""POST /webhooks/cms in-process: each answer, and that only a 202 publishes anything.

The same cases run against a real uvicorn server and Kafka in
tests/integration/test_webhook_on_kafka.py; here they are fast and exhaustive.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient
from structlog.testing import capture_logs
from support.webhook_helpers import (
    NOW,
    OLD_SECRET,
    SECRET,
    MemoryPublisher,
    encode,
    payload,
    signed_headers,
)

from transport.publisher import PublishRejected, PublishUnavailable
from webhooks.app import create_app
from webhooks.config import WebhookConfig

CONFIG = WebhookConfig(secrets=(SECRET,), max_body_bytes=64 * 1024)


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def client(publisher: MemoryPublisher, registry: CollectorRegistry) -> Iterator[TestClient]:
    app = create_app(CONFIG, publisher, registry, clock=lambda: NOW)
    with TestClient(app) as client:
        yield client


def post(client: TestClient, body: bytes, headers: dict[str, str]) -> httpx2.Response:
    return client.post("/webhooks/cms", content=body, headers=headers)


def test_a_signed_change_is_published_once_and_answered_202(
    client: TestClient, publisher: MemoryPublisher
) -> None:
    sent = payload()
    body = encode(sent)
    response = post(client, body, signed_headers(body))
    assert response.status_code == 202, response.text
    assert response.json() == {"status": "accepted", "event_id": sent["event_id"],
                               "document_id": sent["document"]["id"]}
    [event] = publisher.events
    assert (event.event_id, event.document_id, event.version) == (
        sent["event_id"], sent["document"]["id"], sent["document"]["version"])
    assert event.content == sent["document"]["content"]


def test_a_repeated_event_id_is_accepted_again(
    client: TestClient, publisher: MemoryPublisher
) -> None:
    body = encode(payload())
    for _ in range(2):
        assert post(client, body, signed_headers(body)).status_code == 202
    assert len(publisher.events) == 2


def _bad_requests() -> Iterator[Any]:
    body = encode(payload())
    h = signed_headers(body)
    yield pytest.param(body, {"Content-Type": "application/json"}, 401, id="no-signature")
    yield pytest.param(body, signed_headers(body, secrets=(OLD_SECRET,)), 401, id="wrong-secret")
    yield pytest.param(body, signed_headers(body, at=NOW - 301), 401, id="replayed-old-timestamp")
    yield pytest.param(body, signed_headers(body, at=NOW + 301), 401, id="future-timestamp")
    yield pytest.param(body.replace(b'"version": 3', b'"version": 9'), h, 401, id="changed-body")
    yield pytest.param(body, {**h, "Content-Type": "text/plain"}, 415, id="text-plain")
    yield pytest.param(body, {k: v for k, v in h.items() if k != "Content-Type"}, 415,
                       id="no-content-type")
    yield pytest.param(body, {**h, "Content-Type": "application/json; charset=latin-1"}, 415,
                       id="latin-1")
    big = encode(payload(content="x" * 70_000))
    yield pytest.param(big, signed_headers(big), 413, id="oversized")
    for name, raw in [
        ("invalid-json", b'{"payload_version": 1, "event_id": '),
        ("not-utf8", b'{"a": "\xff\xfe"}'),
    ]:
        yield pytest.param(raw, signed_headers(raw), 400, id=name)
    for name, data in [
        ("missing-fields", {"payload_version": 1, "document": {"id": "a"}}),
        ("negative-version", payload(version=-1)),
        ("unknown-event-type", {**payload(), "event_type": "document.archived"}),
        ("id-with-at-sign", payload(id="refunds@v2")),
        ("json-array", [payload()]),
    ]:
        raw = json.dumps(data).encode()
        yield pytest.param(raw, signed_headers(raw), 422, id=name)


@pytest.mark.parametrize(("body", "headers", "status"), list(_bad_requests()))
def test_bad_input_is_refused_with_its_status_and_publishes_nothing(
    client: TestClient, publisher: MemoryPublisher, body: bytes, headers: dict[str, str],
    status: int,
) -> None:
    response = post(client, body, headers)
    assert response.status_code == status, response.text
    assert response.json()["error"]
    assert publisher.events == []


def test_422_names_every_bad_field_without_echoing_the_content(client: TestClient) -> None:
    data = payload(version=-1, content_type="application/pdf")
    del data["occurred_at"]
    body = encode(data)
    response = post(client, body, signed_headers(body))
    assert response.status_code == 422
    locs = {tuple(e["loc"]) for e in response.json()["errors"]}
    assert locs == {("occurred_at",), ("document", "version"), ("document", "content_type")}
    assert "SECRET-CONTENT-MARKER" not in response.text


def test_a_document_id_the_event_refuses_is_reported_at_the_payload_field(
    client: TestClient,
) -> None:
    body = encode(payload(id="refunds#2"))
    response = post(client, body, signed_headers(body))
    assert [e["loc"] for e in response.json()["errors"]] == [["document", "id"]]


@pytest.mark.parametrize("error", [PublishUnavailable("down"), PublishRejected("too big")])
def test_a_publish_failure_is_503_with_retry_after(
    client: TestClient, publisher: MemoryPublisher, error: Exception
) -> None:
    publisher.fail_with = error  # type: ignore[assignment]
    body = encode(payload())
    response = post(client, body, signed_headers(body))
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "5"
    assert publisher.events == []


def test_beyond_the_pending_publish_limit_the_answer_is_503_at_once(
    publisher: MemoryPublisher, registry: CollectorRegistry
) -> None:
    config = WebhookConfig(secrets=(SECRET,), max_pending_publishes=1)
    app = create_app(config, publisher, registry, clock=lambda: NOW)
    publisher.gate = threading.Event()
    body = encode(payload())

    async def scenario() -> tuple[int, int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            async with anyio.create_task_group() as tg:
                statuses: list[int] = []

                async def first() -> None:
                    r = await client.post("/webhooks/cms", content=body,
                                          headers=signed_headers(body))
                    statuses.append(r.status_code)

                tg.start_soon(first)
                await anyio.to_thread.run_sync(publisher.entered.wait, 5)
                second = await client.post("/webhooks/cms", content=body,
                                           headers=signed_headers(body))
                assert publisher.gate is not None
                publisher.gate.set()
            return statuses[0], second.status_code

    assert anyio.run(scenario) == (202, 503)
    assert len(publisher.events) == 1


def test_metrics_count_routes_statuses_signature_failures_and_sizes(
    client: TestClient, registry: CollectorRegistry
) -> None:
    body = encode(payload())
    post(client, body, signed_headers(body))
    post(client, body, {"Content-Type": "application/json"})
    post(client, body, signed_headers(body, secrets=(OLD_SECRET,)))
    client.get("/nowhere")
    text = client.get("/metrics").text

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(f"policy_indexer_webhook_{name}", labels)

    assert value("requests_total", route="/webhooks/cms", status="202") == 1
    assert value("requests_total", route="/webhooks/cms", status="401") == 2
    assert value("requests_total", route="other", status="404") == 1
    assert value("signature_failures_total", reason="missing") == 1
    assert value("signature_failures_total", reason="mismatch") == 1
    assert value("publish_seconds_count", outcome="ok") == 1
    assert value("payload_bytes_count") == 2  # the missing signature is refused before reading
    assert value("payload_bytes_sum") == 2 * len(body)
    assert value("events_accepted_total", action="upsert") == 1
    assert "policy_indexer_webhook_requests_total" in text


def test_logs_name_the_event_and_document_but_never_content_or_signature(
    client: TestClient,
) -> None:
    sent = payload()
    body = encode(sent)
    headers = signed_headers(body)
    bad = signed_headers(body, secrets=(OLD_SECRET,))
    with capture_logs() as logs:
        post(client, body, headers)
        post(client, body, bad)
    accepted = [e for e in logs if e["event"] == "webhook accepted"]
    assert accepted[0]["event_id"] == sent["event_id"]
    assert accepted[0]["document_id"] == sent["document"]["id"]
    everything = repr(logs)
    assert "SECRET-CONTENT-MARKER" not in everything
    for header in (headers, bad):
        assert header["Policy-Signature"].split("v1=")[1] not in everything


def test_health_and_readiness(client: TestClient, publisher: MemoryPublisher) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    publisher.is_ready = False
    assert client.get("/readyz").status_code == 503
    assert client.get("/healthz").status_code == 200
