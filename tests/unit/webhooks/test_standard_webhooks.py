"""POST /webhooks/standard: our payload through a relay, signed by the ``standardwebhooks`` library.

The signer is the reference implementation (PyPI ``standardwebhooks``), not
our own: a request it signs is accepted, the same request with any byte of
the body, the id or the timestamp changed is refused, and every failure has
its documented status with nothing published.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry
from standardwebhooks.webhooks import Webhook
from starlette.testclient import TestClient
from support.webhook_helpers import NOW, MemoryPublisher, encode, payload

from webhooks.adapters.standard import StandardWebhooksAdapter, decode_secret
from webhooks.app import create_app

SECRET = "whsec_" + base64.b64encode(b"standard-webhooks-unit-test-key-0001").decode()
NEXT_SECRET = "whsec_" + base64.b64encode(b"standard-webhooks-unit-test-key-0002").decode()


@pytest.fixture
def client(publisher: MemoryPublisher) -> Iterator[TestClient]:
    adapter = StandardWebhooksAdapter([decode_secret(SECRET), decode_secret(NEXT_SECRET)],
                                      tolerance_seconds=300)
    app = create_app(None, publisher, CollectorRegistry(), clock=lambda: NOW, adapters=[adapter])
    with TestClient(app) as client:
        yield client


def signed(body: bytes, msg_id: str = "msg_1", at: float = NOW,
           secret: str = SECRET) -> dict[str, str]:
    signature = Webhook(secret).sign(msg_id, datetime.fromtimestamp(at, UTC), body.decode())
    return {"Content-Type": "application/json", "webhook-id": msg_id,
            "webhook-timestamp": str(int(at)), "webhook-signature": signature}


def test_a_request_the_library_signs_is_published_once_even_when_retried(
    client: TestClient, publisher: MemoryPublisher
) -> None:
    body = encode(payload())
    answer = client.post("/webhooks/standard", content=body, headers=signed(body))
    assert answer.status_code == 202, answer.text
    assert [e.document_id for e in publisher.events] == ["refunds/late-delivery"]
    assert publisher.events[0].version == 3
    # The relay retries with the same webhook-id: answered, not published again.
    again = client.post("/webhooks/standard", content=body, headers=signed(body))
    assert again.status_code == 202 and again.json()["status"] == "ignored"
    assert len(publisher.events) == 1
    # The sender's next secret (rotation) is accepted too.
    body = encode(payload(version=4))
    assert client.post("/webhooks/standard", content=body,
                       headers=signed(body, "msg_2", secret=NEXT_SECRET)).status_code == 202


def test_any_byte_changed_in_body_id_or_timestamp_is_refused(
    client: TestClient, publisher: MemoryPublisher
) -> None:
    body = encode(payload())
    headers = signed(body)
    for position in range(0, len(body), max(1, len(body) // 7)):
        tampered = bytearray(body)
        tampered[position] ^= 0x01
        answer = client.post("/webhooks/standard", content=bytes(tampered), headers=headers)
        assert answer.status_code == 401, position
    for name, value in (("webhook-id", "msg_2"), ("webhook-timestamp", str(int(NOW) + 1))):
        answer = client.post("/webhooks/standard", content=body, headers={**headers, name: value})
        assert answer.status_code == 401, name
    assert publisher.events == []


@pytest.mark.parametrize(
    ("change", "status", "error"),
    [
        ({"webhook-signature": None}, 401, "unauthorized"),
        ({"webhook-id": None}, 401, "unauthorized"),
        ({"webhook-timestamp": "yesterday"}, 401, "unauthorized"),
        ({"webhook-signature": "v2,abc"}, 401, "unauthorized"),
        ({"webhook-signature": "v1,not*base64"}, 401, "unauthorized"),
        ({"at": NOW - 301}, 401, "unauthorized"),
        ({"at": NOW + 301}, 401, "unauthorized"),
        ({"secret": "whsec_" + base64.b64encode(b"x" * 24).decode()}, 401, "unauthorized"),
        ({"Content-Type": "text/plain"}, 415, "unsupported_media_type"),
        ({"raw": b"{oops"}, 400, "invalid_json"),
        ({"body": {"event_type": "document.renamed"}}, 422, "invalid_payload"),
        ({"body": {"payload_version": 2}}, 422, "invalid_payload"),
    ],
)
def test_each_bad_request_gets_its_status_and_publishes_nothing(
    *, client: TestClient, publisher: MemoryPublisher, change: dict[str, object], status: int,
    error: str,
) -> None:
    sent = payload()
    sent.update(change.get("body", {}))  # type: ignore[call-overload]
    raw = change.get("raw", encode(sent))
    assert isinstance(raw, bytes)
    at = change.get("at", NOW)
    assert isinstance(at, float)
    headers: dict[str, str | None] = {**signed(raw, at=at, secret=str(change.get("secret",
                                                                              SECRET)))}
    for name in ("webhook-signature", "webhook-id", "webhook-timestamp", "Content-Type"):
        if name in change:
            headers[name] = change[name]  # type: ignore[assignment]
    answer = client.post("/webhooks/standard", content=raw,
                         headers={k: v for k, v in headers.items() if v is not None})
    assert answer.status_code == status, answer.text
    assert answer.json()["error"] == error
    assert publisher.events == []


def test_our_signer_and_the_library_agree() -> None:
    """``policy-indexer webhook sign --scheme standard`` signs what the library verifies."""
    from webhooks.adapters.standard import sign

    body = encode(payload())
    value = sign(decode_secret(SECRET), "msg_9", int(NOW), body)
    assert value == Webhook(SECRET).sign("msg_9", datetime.fromtimestamp(NOW, UTC), body.decode())
