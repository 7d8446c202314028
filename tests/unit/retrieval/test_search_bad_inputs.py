"""POST /search refuses each bad input with the JSON error the docs describe:
``k`` must be a JSON integer; a lone surrogate and 5,000-deep JSON are 4xx
JSON answers, never a plain-text 500, and the searcher is never called.

Over a real uvicorn server on loopback and the label-filtering fake searcher.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from support.mcp_searcher import LabelFilteringSearcher, sample_passages

from retrieval.credentials import Credentials
from retrieval.http import create_search_app
from retrieval.models import SearchRequest
from webhooks.serve import ServerThread

KEY = "agent-key-0123456789abcdef"
CREDENTIALS = Credentials.from_mapping({"support-bot": {"key": KEY, "labels": ["public"]}})
DEEP = 5000


@pytest.fixture
def searcher() -> LabelFilteringSearcher:
    return LabelFilteringSearcher(sample_passages())


@pytest.fixture
def server(searcher: LabelFilteringSearcher) -> Iterator[ServerThread]:
    with ServerThread(create_search_app(searcher, CREDENTIALS, CollectorRegistry(),
                                        max_body_bytes=64 * 1024)) as server:
        yield server


def post_raw(server: ServerThread, body: bytes) -> httpx.Response:
    return httpx.post(server.url + "/search", content=body, timeout=10, headers={
        "Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})


def json_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body, dict) and body["error"] and body["detail"]
    return body


@pytest.mark.parametrize(("raw", "shown"), [
    pytest.param(b'"5"', "'5'", id="k-string"),
    pytest.param(b"true", "True", id="k-true"),
    pytest.param(b"false", "False", id="k-false"),
    pytest.param(b"5.0", "5.0", id="k-float"),
    pytest.param(b"null", "None", id="k-null"),
])
def test_k_that_is_not_a_json_integer_is_422_naming_k(
    server: ServerThread, searcher: LabelFilteringSearcher, raw: bytes, shown: str
) -> None:
    body = json_error(post_raw(server, b'{"question": "refund", "k": ' + raw + b"}"), 422)
    assert body["error"] == "invalid_request"
    [error] = body["errors"]
    assert error["loc"] == ["k"]
    assert "JSON integer from 1 to 10" in error["msg"] and shown in error["msg"]
    assert searcher.calls == []


@pytest.mark.parametrize("raw", [b'"true"', b"1", b"0", b'"yes"', b"null"],
                         ids=["string-true", "one", "zero", "yes", "null"])
def test_neighbours_that_is_not_a_json_boolean_is_422_naming_it(
    server: ServerThread, searcher: LabelFilteringSearcher, raw: bytes
) -> None:
    body = json_error(post_raw(server, b'{"question": "refund", "neighbours": ' + raw + b"}"),
                      422)
    assert [error["loc"] for error in body["errors"]] == [["neighbours"]]
    assert searcher.calls == []


def test_neighbours_as_a_json_boolean_is_still_accepted(server: ServerThread) -> None:
    for raw in (b"true", b"false"):
        response = post_raw(server, b'{"question": "refund", "neighbours": ' + raw + b"}")
        assert response.status_code == 200, response.text


def test_k_as_a_json_integer_is_still_accepted(server: ServerThread) -> None:
    response = post_raw(server, b'{"question": "refund the delivery fee", "k": 2}')
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("body", [
    pytest.param(b'{"question": "refund \\ud800 fee"}', id="question"),
    pytest.param(b'{"question": "refund", "scope": ["\\udfff"]}', id="scope"),
    pytest.param(b'{"question": "refund", "\\ud800": 1}', id="field-name"),
])
def test_a_lone_surrogate_is_a_400_json_error(
    server: ServerThread, searcher: LabelFilteringSearcher, body: bytes
) -> None:
    answer = json_error(post_raw(server, body), 400)
    assert answer["error"] == "invalid_json"
    assert searcher.calls == []


def test_a_lone_surrogate_from_a_python_or_mcp_caller_is_refused_by_the_model() -> None:
    # pydantic refuses a str it cannot encode (string_unicode): a 422 / tool error there
    for bad in ({"question": "refund \ud800"}, {"question": "refund", "scope": ["\udfff"]}):
        with pytest.raises(ValueError, match="unicode string"):
            SearchRequest.model_validate(bad)


@pytest.mark.parametrize("body", [
    pytest.param(b"[" * DEEP + b"]" * DEEP, id="bare-array"),
    pytest.param(b'{"question": "refund", "scope": ' + b"[" * DEEP + b"]" * DEEP + b"}",
                 id="inside-a-field"),
    pytest.param(b'{"a":' * DEEP + b"1" + b"}" * DEEP, id="objects"),
])
def test_json_5000_levels_deep_is_a_400_json_error(
    server: ServerThread, searcher: LabelFilteringSearcher, body: bytes
) -> None:
    answer = json_error(post_raw(server, body), 400)
    assert answer["error"] == "invalid_json"
    assert "recursion limit" in str(answer["detail"])
    assert searcher.calls == []


def test_nan_and_a_number_too_large_for_a_float_are_json_errors(server: ServerThread) -> None:
    assert json_error(post_raw(server, b'{"question": "refund", "k": NaN}'), 400)
    huge = json_error(post_raw(server, b'{"question": "refund", "k": 1e400}'), 422)
    assert huge["errors"][0]["input"] == "inf"
