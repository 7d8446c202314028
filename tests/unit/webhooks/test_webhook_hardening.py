"""Hostile input to ``POST /webhooks/cms``: it refuses (422) what a worker would dead-letter,
and, fuzzed over bodies, headers and signatures, answers only documented codes and
publishes only what was valid and signed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient
from support.webhook_helpers import (
    NOW,
    OLD_SECRET,
    SECRET,
    MemoryPublisher,
    payload,
    signed_headers,
)

from events.model import MAX_SOURCE_VERSION, MAX_VERSION
from transport.publisher import PublishUnavailable
from webhooks.app import create_app
from webhooks.config import WebhookConfig
from webhooks.payload import WebhookPayload

CONFIG = WebhookConfig(secrets=(SECRET,), max_body_bytes=16 * 1024)
# The codes the receiver's docstring lists for this route.
DOCUMENTED = {202, 400, 401, 413, 415, 422, 503}


@pytest.fixture
def client(publisher: MemoryPublisher) -> Iterator[TestClient]:
    app = create_app(CONFIG, publisher, CollectorRegistry(), clock=lambda: NOW)
    with TestClient(app) as client:
        yield client


def meta(**fields: Any) -> dict[str, Any]:
    return {"metadata": {"access_labels": ["agents"], **fields}}


POISON: list[tuple[str, dict[str, Any], list[object]]] = [
    ("version 2^63", payload(version=2**63), ["document", "version"]),
    ("version 10^20", payload(version=99999999999999999999), ["document", "version"]),
    ("version 2^63-1", payload(version=2**63 - 1), ["document", "version"]),
    # The pipeline's headroom: a source's version at 2^53 - 1 could never be edited again.
    ("version 2^53-1", payload(version=MAX_VERSION), ["document", "version"]),
    ("version just above a source's", payload(version=MAX_SOURCE_VERSION + 1),
     ["document", "version"]),
    ("content with NUL", payload(content="# A\n\nbad\x00byte"), ["document", "content"]),
    ("id of 600 bytes", payload(id="r" * 600), ["document", "id"]),
    ("label with NUL", payload(**meta(access_labels=["public\x00agents"])),
     ["document", "metadata", "access_labels", 0]),
    ("empty label", payload(**meta(access_labels=[""])),
     ["document", "metadata", "access_labels", 0]),
    ("label too long", payload(**meta(access_labels=["a" * 300])),
     ["document", "metadata", "access_labels", 0]),
    ("keyword with a newline", payload(**meta(keywords=["re\nfund"])),
     ["document", "metadata", "keywords", 0]),
]


@pytest.mark.parametrize(("case", "data", "loc"), POISON, ids=[p[0] for p in POISON])
def test_what_a_worker_would_dead_letter_is_422_at_its_field_and_not_published(
    client: TestClient, publisher: MemoryPublisher, case: str, data: dict[str, Any],
    loc: list[object],
) -> None:
    body = json.dumps(data).encode()
    response = client.post("/webhooks/cms", content=body, headers=signed_headers(body))
    assert response.status_code == 422, (case, response.text)
    assert [e["loc"][: len(loc)] for e in response.json()["errors"]] == [loc], response.text
    assert publisher.events == []


def test_the_largest_version_is_accepted(client: TestClient, publisher: MemoryPublisher) -> None:
    body = json.dumps(payload(version=MAX_SOURCE_VERSION)).encode()
    assert client.post("/webhooks/cms", content=body,
                       headers=signed_headers(body)).status_code == 202
    assert [e.version for e in publisher.events] == [MAX_SOURCE_VERSION]


# -- fuzz ---------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8,
)
FIELDS = ["payload_version", "event_id", "event_type", "occurred_at", "document"]
DOC_FIELDS = ["id", "version", "title", "path", "content_type", "content", "metadata"]
HOSTILE_TEXT = st.sampled_from(["", "\x00", "public\x00agents", "\u0430" * 3, "x" * 600,
                                "refunds@v2", "\ud7ff", "\u202e", " ", "\n"])


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A valid payload with fields changed, removed or added, or bytes that are no JSON."""
    kind = draw(st.sampled_from(["valid", "valid", "mutated", "mutated", "raw", "large"]))
    if kind == "raw":
        return draw(st.binary(max_size=200))
    data: dict[str, Any] = payload(draw(st.sampled_from(
        ["document.published", "document.updated", "document.deleted"])))
    if kind == "large" and "content" in data["document"]:
        data["document"]["content"] = "x" * (CONFIG.max_body_bytes + 1)
    if kind == "mutated":
        for _ in range(draw(st.integers(min_value=1, max_value=3))):
            where = draw(st.sampled_from(["top", "document", "metadata"]))
            doc = data.get("document")
            if where != "top" and not isinstance(doc, dict):
                continue  # an earlier change replaced the document with a non-object
            target: Any = data
            if isinstance(doc, dict) and where != "top":
                target = doc if where == "document" else doc.setdefault("metadata", {})
            if not isinstance(target, dict):
                continue
            names = FIELDS if where == "top" else DOC_FIELDS if where == "document" else [
                "scope", "access_labels", "keywords", "valid_from"]
            name = draw(st.sampled_from([*names, "unexpected"]))
            action = draw(st.sampled_from(["set", "hostile", "drop"]))
            if action == "drop":
                target.pop(name, None)
            elif action == "hostile":
                text = draw(HOSTILE_TEXT)
                target[name] = [text] if name in ("scope", "access_labels", "keywords") else text
            else:
                target[name] = draw(json_values)
    return json.dumps(data).encode()


PRINTABLE_ASCII = st.characters(min_codepoint=32, max_codepoint=126)  # what a header can carry


@st.composite
def requests(draw: st.DrawFn) -> tuple[bytes, dict[str, str], bool]:
    """A body, its headers, and whether the signature is valid and current."""
    body = draw(bodies())
    how = draw(st.sampled_from(["signed", "signed", "signed", "old-secret", "stale", "none",
                                "garbage", "other-body"]))
    signed = how == "signed"
    if how == "none":
        headers = {"Content-Type": "application/json"}
    elif how == "garbage":
        headers = {"Content-Type": "application/json",
                   "Policy-Signature": draw(st.text(PRINTABLE_ASCII, max_size=60))}
    elif how == "old-secret":
        headers = signed_headers(body, secrets=(OLD_SECRET,))
    elif how == "stale":
        headers = signed_headers(body, at=NOW - 10_000)
    elif how == "other-body":
        headers = signed_headers(body + b" ")
    else:
        headers = signed_headers(body)
    content_type = draw(st.sampled_from(
        ["application/json", "application/json", "application/json; charset=utf-8", "text/plain",
         None]))
    if content_type is None:
        headers.pop("Content-Type", None)
    else:
        headers["Content-Type"] = content_type
    valid_type = content_type in ("application/json", "application/json; charset=utf-8")
    return body, headers, signed and valid_type


def is_valid(body: bytes) -> bool:
    try:
        WebhookPayload.model_validate_json(body).to_change_event(received_at=_received())
    except pydantic.ValidationError:
        return False
    return True


def _received() -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(NOW, UTC)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(request=requests(), queue_down=st.sampled_from([False] * 3 + [True]))
def test_fuzzed_requests_get_documented_codes_and_only_valid_signed_ones_publish(
    client: TestClient, publisher: MemoryPublisher, request: tuple[bytes, dict[str, str], bool],
    queue_down: bool,
) -> None:
    body, headers, signed = request
    publisher.events.clear()
    publisher.fail_with = PublishUnavailable("queue away") if queue_down else None
    response = client.post("/webhooks/cms", content=body, headers=headers)
    event(f"status {response.status_code}")  # --hypothesis-show-statistics: every code is met
    assert response.status_code in DOCUMENTED, (response.status_code, response.text)
    assert isinstance(response.json()["error" if response.status_code != 202 else "status"], str)
    acceptable = signed and len(body) <= CONFIG.max_body_bytes and is_valid(body)
    should_publish = acceptable and not queue_down
    assert (response.status_code == 202) == should_publish, (response.status_code, response.text)
    assert (response.status_code == 503) == (acceptable and queue_down), response.text
    assert len(publisher.events) == (1 if should_publish else 0)
    if should_publish:
        assert publisher.events[0].to_json_bytes() == WebhookPayload.model_validate_json(
            body).to_change_event(received_at=_received()).to_json_bytes()
