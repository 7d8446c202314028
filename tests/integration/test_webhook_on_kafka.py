"""The webhook receiver on a real uvicorn server, publishing to the real Kafka.

Every test reads its own topic back to the end, so "publishes nothing" and
"exactly one event" are checked against what Kafka holds, not what the
receiver says.
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from support.kafka_topics import MAX_MESSAGE_BYTES, read_topic, temporary_topic
from support.waiting import wait_until
from support.webhook_helpers import OLD_SECRET, SECRET, encode, payload

from events.model import ChangeEvent
from transport.kafka_producer import KafkaEventPublisher, KafkaPublisherConfig
from webhooks import signature
from webhooks.app import create_app
from webhooks.config import WebhookConfig
from webhooks.payload import WebhookPayload
from webhooks.serve import ServerThread

pytestmark = pytest.mark.services

LIMIT = 10 * 1024 * 1024


@dataclass
class Receiver:
    url: str
    port: int
    topic: str
    bootstrap: str

    def post(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return httpx.post(f"{self.url}/webhooks/cms", content=body, headers=headers, timeout=30)

    def events(self) -> list[tuple[bytes, ChangeEvent]]:
        return read_topic(self.bootstrap, self.topic)


def headers_for(body: bytes, secrets: tuple[bytes, ...] = (SECRET,), at: float | None = None,
                content_type: str = "application/json") -> dict[str, str]:
    t = int(time.time() if at is None else at)
    return {"Content-Type": content_type, signature.HEADER: signature.sign(secrets, t, body)}


def run_receiver(bootstrap: str, topic: str, secrets: tuple[bytes, ...]) -> ServerThread:
    publisher = KafkaEventPublisher(KafkaPublisherConfig(
        bootstrap_servers=bootstrap, topic=topic, timeout_seconds=5,
        max_message_bytes=MAX_MESSAGE_BYTES,
    ))
    app = create_app(WebhookConfig(secrets=secrets, max_body_bytes=LIMIT), publisher,
                     CollectorRegistry())
    return ServerThread(app)


@pytest.fixture
def receiver(kafka_bootstrap: str, unique: str) -> Iterator[Receiver]:
    with temporary_topic(kafka_bootstrap, unique) as topic, \
            run_receiver(kafka_bootstrap, topic, (SECRET,)) as server:
        yield Receiver(server.url, server.port, topic, kafka_bootstrap)


def expected_event(sent: dict[str, Any], received_at: datetime | None) -> ChangeEvent:
    assert received_at is not None, "the receiver stamps received_at"
    return WebhookPayload.model_validate_json(json.dumps(sent)).to_change_event(received_at)


def test_publish_update_and_delete_each_land_once_keyed_by_document_id(
    receiver: Receiver,
) -> None:
    sent = [
        payload("document.published", id="returns/basic", version=1),
        payload("document.updated", id="returns/basic", version=2, content="# Returns\n\nv2\n"),
        payload("document.deleted", id="returns/basic", version=3),
    ]
    for data in sent:
        body = encode(data)
        response = receiver.post(body, headers_for(body))
        assert response.status_code == 202, response.text

    records = receiver.events()
    assert [key for key, _ in records] == [b"returns/basic"] * 3  # one key: one partition, in order
    for (_, event), data in zip(records, sent, strict=True):
        assert event == expected_event(data, event.received_at)


def _raw_exchange(port: int, head: str, chunks: Iterator[bytes]) -> tuple[int, int]:
    """Send ``head`` then chunks until the server answers; return (status, body bytes sent)."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.encode("ascii"))
        for chunk in chunks:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break
            try:
                sock.sendall(chunk)
            except OSError:  # the server answered and closed: read what it said
                break
            sent += len(chunk)
        answer = b""
        while b"\r\n" not in answer:
            data = sock.recv(4096)
            if not data:
                break
            answer += data
    return int(answer.split(b" ", 2)[1]), sent


def test_an_oversized_body_is_refused_without_being_read(receiver: Receiver) -> None:
    body = encode(payload())
    sig = headers_for(body)[signature.HEADER]
    common = (f"POST /webhooks/cms HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
              f"{signature.HEADER}: {sig}\r\n")
    # Declared too large: answered before a single body byte is sent.
    status, sent = _raw_exchange(
        receiver.port, common + f"Content-Length: {50 * LIMIT}\r\n\r\n", iter(()))
    assert (status, sent) == (413, 0)
    # Chunked, no length: answered once the limit is passed, long before the 50x body ends.
    chunk = b"x" * 65536
    framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    status, sent = _raw_exchange(
        receiver.port, common + "Transfer-Encoding: chunked\r\n\r\n",
        iter([framed] * (50 * LIMIT // len(chunk))))
    assert status == 413
    assert sent < 5 * LIMIT
    assert receiver.events() == []


def _bad_requests() -> Iterator[Any]:
    body = encode(payload())
    yield pytest.param(body, {"Content-Type": "application/json"}, 401, id="no-signature")
    yield pytest.param(body, headers_for(body, secrets=(OLD_SECRET,)), 401, id="wrong-signature")
    yield pytest.param(body, headers_for(body, at=time.time() - 600), 401,
                       id="replay-old-timestamp")
    changed = body.replace(b'"version": 3', b'"version": 30')
    yield pytest.param(changed, headers_for(body), 401, id="body-changed-after-signing")
    yield pytest.param(body, headers_for(body, content_type="text/plain"), 415,
                       id="wrong-content-type")
    raw = b'{"payload_version": 1, "event_id": "e1", '
    yield pytest.param(raw, headers_for(raw), 400, id="invalid-json")
    for name, data in [
        ("missing-fields", {"payload_version": 1, "event_id": "e2"}),
        ("negative-version", payload(version=-4)),
        ("unknown-event-type", {**payload(), "event_type": "document.moved"}),
    ]:
        raw = encode(data)
        yield pytest.param(raw, headers_for(raw), 422, id=name)


def test_each_bad_input_is_refused_with_its_status_and_publishes_nothing(
    receiver: Receiver,
) -> None:
    answers = {}
    for case in _bad_requests():
        body, headers, status = case.values
        response = receiver.post(body, headers)
        answers[case.id] = (response.status_code, status)
    assert {k: got for k, (got, _) in answers.items()} == {k: want for k, (_, want) in
                                                           answers.items()}
    assert receiver.events() == []


def test_a_5_mb_document_is_accepted_whole(receiver: Receiver) -> None:
    content = "# Big policy\n\n" + ("Lorem ipsum dolor sit amet, policy text. " * 130_000)
    assert len(content.encode()) > 5_000_000
    sent = payload(content=content)
    body = encode(sent)
    response = receiver.post(body, headers_for(body))
    assert response.status_code == 202, response.text
    [(key, event)] = receiver.events()
    assert key == sent["document"]["id"].encode()
    assert event == expected_event(sent, event.received_at)


def test_rotation_both_secrets_sign_then_the_removed_one_is_refused(
    kafka_bootstrap: str, unique: str
) -> None:
    new, old = b"whsec_rotation_new_0000001", b"whsec_rotation_old_0000001"
    accepted = []
    with temporary_topic(kafka_bootstrap, unique) as topic:
        with run_receiver(kafka_bootstrap, topic, (new, old)) as during:
            for secret in (new, old):
                sent = payload()
                body = encode(sent)
                r = httpx.post(f"{during.url}/webhooks/cms", content=body,
                               headers=headers_for(body, secrets=(secret,)))
                assert r.status_code == 202, r.text
                accepted.append(sent["event_id"])
        with run_receiver(kafka_bootstrap, topic, (new,)) as after:
            refused, fine = payload(), payload()
            body = encode(refused)
            r = httpx.post(f"{after.url}/webhooks/cms", content=body,
                           headers=headers_for(body, secrets=(old,)))
            assert r.status_code == 401
            body = encode(fine)
            r = httpx.post(f"{after.url}/webhooks/cms", content=body,
                           headers=headers_for(body, secrets=(new,)))
            assert r.status_code == 202
            accepted.append(fine["event_id"])
        events = read_topic(kafka_bootstrap, topic)
    assert sorted(e.event_id for _, e in events) == sorted(accepted)


def test_health_readiness_and_metrics_are_served(receiver: Receiver) -> None:
    assert httpx.get(f"{receiver.url}/healthz").status_code == 200
    assert httpx.get(f"{receiver.url}/readyz").status_code == 200
    body = encode(payload())
    receiver.post(body, headers_for(body))
    text = httpx.get(f"{receiver.url}/metrics").text
    assert 'policy_indexer_webhook_requests_total{route="/webhooks/cms",status="202"} 1.0' in text
    assert 'policy_indexer_webhook_publish_seconds_count{outcome="ok"} 1.0' in text


def test_with_no_broker_listening_the_answer_is_503_and_readyz_says_so(unique: str) -> None:
    with socket.socket() as probe:  # a loopback port with nothing behind it
        probe.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{probe.getsockname()[1]}"
    publisher = KafkaEventPublisher(KafkaPublisherConfig(
        bootstrap_servers=dead, topic=unique, timeout_seconds=1))
    app = create_app(WebhookConfig(secrets=(SECRET,)), publisher, CollectorRegistry())
    with ServerThread(app) as server:
        assert httpx.get(f"{server.url}/readyz", timeout=10).status_code == 503
        body = encode(payload())
        r = httpx.post(f"{server.url}/webhooks/cms", content=body, headers=headers_for(body),
                       timeout=30)
        assert r.status_code == 503
        assert r.headers["Retry-After"] == "5"
    publisher.close()


def test_a_client_leaving_mid_body_publishes_nothing_and_is_no_server_error(
    receiver: Receiver,
) -> None:
    body = encode(payload())
    sig = headers_for(body)[signature.HEADER]
    with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as sock:
        sock.sendall((f"POST /webhooks/cms HTTP/1.1\r\nHost: t\r\nContent-Type: application/json"
                      f"\r\n{signature.HEADER}: {sig}\r\nContent-Length: {len(body)}\r\n\r\n")
                     .encode() + body[:20])
    line = 'policy_indexer_webhook_requests_total{route="/webhooks/cms",status="400"} 1.0'
    text = wait_until(lambda: httpx.get(f"{receiver.url}/metrics").text, 10,
                      f"/metrics to count the refusal: {line}", accept=lambda t: line in t)
    assert 'status="500"' not in text
    assert receiver.events() == []
