"""POST /search on a real uvicorn server on loopback, over a label-filtering fake searcher.

What a caller needs: its labels come from its API key and never from the body;
each refusal says what was wrong (field and value for a bad request); a good
request gets the SearchResponse JSON; the search metrics count what happened.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client import CollectorRegistry
from support.mcp_searcher import (
    AS_OF,
    FINANCE_MARKER,
    PUBLIC_MARKER,
    LabelFilteringSearcher,
    passage,
    sample_passages,
)

from retrieval.credentials import Credentials
from retrieval.http import create_search_app
from retrieval.metrics import SearchMetrics
from retrieval.models import SearchRequest, SearchResponse
from retrieval.searcher import MeteredSearcher
from webhooks.serve import ServerThread

AGENT_KEY = "agent-key-0123456789abcdef"
FINANCE_KEY = "finance-key-0123456789abcdef"
CREDENTIALS = Credentials.from_mapping({
    "support-bot": {"key": AGENT_KEY, "labels": ["public"]},
    "finance-desk": {"key": FINANCE_KEY, "labels": ["public", "finance"]},
})
MAX_BODY = 4096
METRICS_TOKEN = "metrics-token-0123456789abcdef"


@pytest.fixture
def searcher() -> LabelFilteringSearcher:
    return LabelFilteringSearcher(sample_passages())


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def server(searcher: LabelFilteringSearcher, registry: CollectorRegistry
           ) -> Iterator[ServerThread]:
    app = create_search_app(searcher, CREDENTIALS, registry, max_body_bytes=MAX_BODY,
                            metrics_token=METRICS_TOKEN)
    with ServerThread(app) as server:
        yield server


def post(server: ServerThread, body: object, key: str | None = AGENT_KEY,
         content_type: str = "application/json") -> httpx.Response:
    headers = {"Content-Type": content_type}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(server.url + "/search", content=content, headers=headers, timeout=10)


def test_a_good_request_gets_ranked_passages_with_provenance(server: ServerThread) -> None:
    response = post(server, {"question": "Do you refund the delivery fee?", "k": 3})
    assert response.status_code == 200, response.text
    answer = SearchResponse.model_validate(response.json())
    assert answer.status == "ok"
    [passage] = answer.passages
    assert (passage.document_id, passage.clause, passage.version) == ("refunds", "4.2", 3)
    assert PUBLIC_MARKER in passage.text
    assert passage.link == "policies/refunds.md#4.2"


def test_labels_come_from_the_key_not_the_request(
    server: ServerThread, searcher: LabelFilteringSearcher
) -> None:
    question = {"question": "What chargeback reserve applies?"}
    agent = post(server, question, key=AGENT_KEY).json()
    assert agent["status"] == "no_access"
    assert FINANCE_MARKER not in json.dumps(agent)
    finance = post(server, question, key=FINANCE_KEY).json()
    assert finance["status"] == "ok"
    assert FINANCE_MARKER in finance["passages"][0]["text"]
    assert [labels for _, labels in searcher.calls] == [
        frozenset({"public"}), frozenset({"public", "finance"})]


@pytest.mark.parametrize("field", ["labels", "access_labels"])
def test_a_body_carrying_labels_is_refused_422(
    server: ServerThread, searcher: LabelFilteringSearcher, field: str
) -> None:
    response = post(server, {"question": "chargeback reserve", field: ["finance"]})
    assert response.status_code == 422
    body = response.json()
    [error] = body["errors"]
    assert error["loc"] == [field]
    assert error["input"] == ["finance"]
    assert "API key" in error["msg"]
    assert searcher.calls == []


def test_401_says_whether_the_key_is_missing_or_unknown(
    server: ServerThread, searcher: LabelFilteringSearcher
) -> None:
    missing = post(server, {"question": "refund"}, key=None)
    assert missing.status_code == 401
    assert "no API key" in missing.json()["detail"]
    assert missing.headers["WWW-Authenticate"].startswith("Bearer")
    unknown = post(server, {"question": "refund"}, key="not-a-configured-key-000")
    assert unknown.status_code == 401
    assert "not known" in unknown.json()["detail"]
    basic = httpx.post(server.url + "/search", json={"question": "refund"},
                       headers={"Authorization": f"Basic {AGENT_KEY}"})
    assert basic.status_code == 401
    assert "Bearer" in basic.json()["detail"]
    assert searcher.calls == []


@pytest.mark.parametrize(
    ("body", "field", "value"),
    [
        pytest.param({"question": "refund", "k": 11}, "k", 11, id="k-too-large"),
        pytest.param({"question": "refund", "k": 0}, "k", 0, id="k-zero"),
        pytest.param({"question": ""}, "question", "", id="empty-question"),
        pytest.param({"question": "refund", "as_of": "2026-13-01"}, "as_of", "2026-13-01",
                     id="bad-date"),
        pytest.param({"question": "refund", "language": "english!"}, "language", "english!",
                     id="bad-language"),
        pytest.param({"k": 3}, "question", {"k": 3}, id="no-question"),
        pytest.param({"question": "refund", "scope": "berlin"}, "scope", "berlin",
                     id="scope-not-a-list"),
    ],
)
def test_a_bad_request_is_422_naming_field_and_value(
    server: ServerThread, body: dict[str, object], field: str, value: object
) -> None:
    response = post(server, body)
    assert response.status_code == 422, response.text
    answer = response.json()
    assert answer["error"] == "invalid_request"
    [error] = answer["errors"]
    assert error["loc"][0] == field
    assert error["input"] == value
    assert field in answer["detail"]
    assert json.dumps(value) in answer["detail"]


def test_a_non_json_content_type_is_415(server: ServerThread) -> None:
    response = post(server, b"question=refund", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert "application/x-www-form-urlencoded" in response.json()["detail"]
    latin = post(server, {"question": "refund"}, content_type="application/json; charset=latin-1")
    assert latin.status_code == 415


def test_a_body_over_the_limit_is_413(server: ServerThread) -> None:
    response = post(server, {"question": "refund", "scope": ["x" * 100] * 60})
    assert response.status_code == 413
    assert str(MAX_BODY) in response.json()["detail"]


def test_body_that_is_not_a_json_object_is_400(server: ServerThread) -> None:
    assert post(server, b"{not json").status_code == 400
    not_object = post(server, ["refund"])
    assert not_object.status_code == 400
    assert "list" in not_object.json()["detail"]


def test_a_failing_search_is_500_without_details(
    server: ServerThread, searcher: LabelFilteringSearcher, registry: CollectorRegistry
) -> None:
    searcher.fail_with = RuntimeError("elasticsearch said: secret internals")
    response = post(server, {"question": "refund"})
    assert response.status_code == 500
    assert "secret internals" not in response.text
    assert registry.get_sample_value(
        "policy_indexer_search_responses_total", {"interface": "http", "status": "error"}) == 1


def test_metrics_count_statuses_latency_and_ranked_documents(
    server: ServerThread, registry: CollectorRegistry
) -> None:
    post(server, {"question": "refund the delivery fee"})
    post(server, {"question": "refund the delivery fee"})
    post(server, {"question": "chargeback reserve"})
    post(server, {"question": "weather tomorrow"})
    scrape = httpx.get(server.url + "/metrics",
                       headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text
    assert 'policy_indexer_search_responses_total{interface="http",status="ok"} 2.0' in scrape
    for status in ("no_access", "no_document"):
        assert registry.get_sample_value(
            "policy_indexer_search_responses_total", {"interface": "http", "status": status}) == 1
    assert registry.get_sample_value(
        "policy_indexer_search_latency_seconds_count", {"interface": "http"}) == 4
    assert registry.get_sample_value(
        "policy_indexer_search_document_retrievals_total", {"document_id": "refunds"}) == 2
    assert registry.get_sample_value(
        "policy_indexer_search_document_retrievals_total",
        {"document_id": "finance-chargebacks"}) is None


def test_healthz(server: ServerThread) -> None:
    response = httpx.get(server.url + "/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


class _Fixed:
    def __init__(self, response: SearchResponse) -> None:
        self.response = response

    def search(self, request: SearchRequest, caller_labels: frozenset[str]) -> SearchResponse:
        return self.response


def test_retrievals_count_ranked_passages_only_and_stay_bounded() -> None:
    registry = CollectorRegistry()
    metrics = SearchMetrics.create(registry, max_documents=2)
    metrics.seed(["never-asked"])
    ranked = [passage(f"doc-{i}", "text") for i in range(3)]
    neighbour = passage("doc-9", "text").model_copy(
        update={"via": "neighbour_of", "neighbour_of": ranked[0].chunk_id})
    response = SearchResponse(status="ok", message="", passages=[*ranked, neighbour],
                              as_of=AS_OF, threshold=0.5)
    MeteredSearcher(_Fixed(response), metrics, "mcp").search(
        SearchRequest(question="q"), frozenset())

    def retrievals(document_id: str) -> float | None:
        return registry.get_sample_value("policy_indexer_search_document_retrievals_total",
                                         {"document_id": document_id})

    assert retrievals("never-asked") == 0  # seeded: a visible zero
    assert retrievals("doc-0") == 1
    assert retrievals("doc-1") is None and retrievals("doc-2") is None
    assert retrievals("_other") == 2  # beyond the bound of 2 distinct ids
    assert retrievals("doc-9") is None  # a neighbour was not chosen
