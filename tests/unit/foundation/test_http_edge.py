"""``foundation.http``: each refusal of the shared edge, on a route of its own.

The route reads the way the webhook receiver, the adapters and the search API do:
content type, body within the limit, a JSON object, then a model; each refusal
is the JSON ``{"error", "detail"[, "errors"]}`` with its status.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from prometheus_client import CollectorRegistry, Counter
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from foundation.http.edge import (
    DRAIN_BYTES,
    InvalidJson,
    checked_body,
    content_type_problem,
    json_object,
    media_type,
    refusal,
    validate_json,
)
from foundation.http.routes import metrics_route, probe_routes
from foundation.http.server import ServerThread
from foundation.validation import describe, field_errors

LIMIT = 64


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1)
    k: int = Field(default=5, ge=1)


def refuse(status: int, error: str, detail: str) -> Response:
    return refusal(status, error, detail)


async def ask(request: Request) -> Response:
    body = await checked_body(request, LIMIT, refuse)
    if isinstance(body, Response):
        return body
    try:
        data = json_object(body)
    except InvalidJson as exc:
        return refuse(400, "invalid_json", str(exc))
    try:
        question = Question.model_validate(data)
    except ValidationError as exc:
        errors = field_errors(exc, shown_input=True)
        return refusal(422, "invalid_request", describe(errors), errors=errors)
    return JSONResponse({"question": question.question, "k": question.k})


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(Starlette(routes=[Route("/ask", ask, methods=["POST"])])) as client:
        yield client


def post(client: TestClient, content: bytes | Iterator[bytes],
         content_type: str | None = "application/json") -> httpx2.Response:
    headers = {} if content_type is None else {"Content-Type": content_type}
    return client.post("/ask", content=content, headers=headers)


def refused(response: httpx2.Response, status: int, error: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == error
    detail: str = body["detail"]
    return detail


def test_a_good_request_passes_every_check(client: TestClient) -> None:
    response = post(client, b'{"question": "refund", "k": 2}',
                    content_type="application/json; charset=UTF-8")
    assert response.status_code == 200
    assert response.json() == {"question": "refund", "k": 2}


def test_a_wrong_content_type_is_415_naming_it(client: TestClient) -> None:
    detail = refused(post(client, b"question=refund", "application/x-www-form-urlencoded"),
                     415, "unsupported_media_type")
    assert detail == ("Content-Type='application/x-www-form-urlencoded'; "
                      "send application/json (UTF-8)")
    refused(post(client, b'{"question": "x"}', "application/json; charset=latin-1"),
            415, "unsupported_media_type")


def test_a_missing_content_type_is_415(client: TestClient) -> None:
    detail = refused(post(client, b'{"question": "x"}', content_type=None),
                     415, "unsupported_media_type")
    assert detail.startswith("Content-Type=None;")


def test_a_declared_body_over_the_limit_is_413_before_it_is_read(client: TestClient) -> None:
    response = post(client, b'{"question": "' + b"x" * LIMIT + b'"}')
    detail = refused(response, 413, "payload_too_large")
    assert detail == f"body is larger than max_body_bytes={LIMIT} (declared Content-Length: 80)"


def test_a_chunked_body_over_the_limit_is_413_once_it_passes_it(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"question": "'
        for _ in range(10):
            yield b"x" * 16

    # the test client hands the app the whole body at once: the chunk over the limit is
    # the last, and the refusal must not try to drain a stream already read to its end
    detail = refused(post(client, chunks()), 413, "payload_too_large")
    assert detail.startswith(f"body is larger than max_body_bytes={LIMIT} (received so far: ")


def test_a_content_length_that_is_not_a_number_is_400() -> None:
    sent: list[bytes] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message["body"])

    request = Request({"type": "http", "method": "POST", "path": "/ask", "headers": [
        (b"content-type", b"application/json"), (b"content-length", b"12x")]}, receive)
    answer = anyio.run(checked_body, request, LIMIT, refuse)
    assert isinstance(answer, Response)
    assert answer.status_code == 400
    assert b"is not a number" in answer.body


def test_invalid_json_is_400(client: TestClient) -> None:
    detail = refused(post(client, b'{"question": '), 400, "invalid_json")
    assert detail.startswith("body is not valid JSON: ")
    for bad in (b'{"question": NaN}', b'{"question": "\\ud800"}', b'{"a": "\xff"}'):
        refused(post(client, bad), 400, "invalid_json")


def test_json_nested_too_deeply_is_400_saying_so(client: TestClient) -> None:
    deep = b"[" * 30 + b"]" * 30
    assert "nested" not in refused(post(client, deep), 400, "invalid_json")  # an array
    with pytest.raises(InvalidJson, match=r"nested too deeply .*recursion limit"):
        json_object(b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}")


def test_json_that_is_not_an_object_is_400(client: TestClient) -> None:
    assert refused(post(client, b'["refund"]'), 400, "invalid_json") == (
        "body must be a JSON object, got list")
    assert refused(post(client, b'"refund"'), 400, "invalid_json").endswith("got str")


def test_a_validation_error_names_field_input_and_rule(client: TestClient) -> None:
    response = post(client, b'{"question": "", "k": 0, "labels": ["x"]}')
    detail = refused(response, 422, "invalid_request")
    assert detail == ('question="": String should have at least 1 character; '
                      "k=0: Input should be greater than or equal to 1; "
                      'labels=["x"]: Extra inputs are not permitted')
    errors = response.json()["errors"]
    assert [(e["loc"], e["type"], e["input"]) for e in errors] == [
        (["question"], "string_too_short", ""), (["k"], "greater_than_equal", 0),
        (["labels"], "extra_forbidden", ["x"])]


def test_a_shown_input_is_shortened_and_encodable() -> None:
    with pytest.raises(ValidationError) as caught:
        Question.model_validate({"question": "q\ud800", "k": "x" * 500})
    errors = field_errors(caught.value, shown_input=True)
    assert [e["loc"] for e in errors] == [["question"], ["k"]]
    assert errors[0]["input"] == "q\\ud800"
    assert errors[1]["input"] == "x" * 120 + "..."
    assert "input" not in field_errors(caught.value)[0]
    assert describe(errors).startswith('question="q\\\\ud800": ')


def test_validate_json_tells_not_json_from_bad_fields() -> None:
    with pytest.raises(InvalidJson, match=r"^body is not valid JSON: "):
        validate_json(Question, b"{nope")
    with pytest.raises(ValidationError):
        validate_json(Question, b'{"question": ""}')
    assert validate_json(Question, b'{"question": "q"}').question == "q"


def test_a_refusal_is_ascii_json_with_its_headers() -> None:
    response = refusal(401, "unauthorized", "no key \ud800", headers={"WWW-Authenticate": "x"},
                       errors=[{"loc": ["k"]}])
    assert response.body == (b'{"error":"unauthorized","detail":"no key \\ud800",'
                             b'"errors":[{"loc":["k"]}]}')
    assert response.headers["www-authenticate"] == "x"


def test_media_types() -> None:
    assert media_type('application/JSON; charset="utf8"') == "application/json"
    assert media_type("application/json; charset=latin-1") is None
    assert content_type_problem("text/plain", frozenset({"a/b", "a/a"})) == (
        "Content-Type='text/plain'; send a/a or a/b (UTF-8)")


def test_a_large_refused_body_closes_the_connection_a_small_one_is_drained(
    client: TestClient,
) -> None:
    small = post(client, b"x" * 100, content_type="text/plain")
    assert small.status_code == 415 and "connection" not in small.headers
    large = post(client, b"x" * (DRAIN_BYTES + 1), content_type="text/plain")
    assert large.status_code == 415 and large.headers["connection"] == "close"


def test_probes_and_metrics_in_a_server_thread() -> None:
    registry = CollectorRegistry()
    Counter("edge_test", "a counter", registry=registry).inc()
    app = Starlette(routes=[*probe_routes(readiness=lambda: (503, {"status": "starting"})),
                            metrics_route(registry)])
    with ServerThread(app, name="edge test") as server:
        assert server.alive()
        assert httpx.get(server.url + "/healthz").json() == {"status": "ok"}
        ready = httpx.get(server.url + "/readyz")
        assert (ready.status_code, ready.json()) == (503, {"status": "starting"})
        assert "edge_test_total 1.0" in httpx.get(server.url + "/metrics").text
    assert not server.alive()


def test_a_port_in_use_is_an_oserror_at_once() -> None:
    with ServerThread(Starlette()) as server, pytest.raises(OSError, match="in use"):
        ServerThread(Starlette(), port=server.port)
