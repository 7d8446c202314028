"""check_citations over HTTP (POST /citations/check) and MCP (streamable HTTP), on loopback.

A real ``SearchService`` over the in-memory store, every answer recorded as a run;
the checks' labels come from the API key, never the body; a run of another key is
an unknown run (404, or a tool error); each refusal names what was wrong; the
citation metrics count results, problem codes and replies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client import CollectorRegistry
from support.chunks import make_chunk

from retrieval.citations import TOOL_DESCRIPTION as CHECK_DESCRIPTION
from retrieval.citations import TOOL_NAME as CHECK_TOOL
from retrieval.citations import CheckRequest, CheckResponse, CitationChecker
from retrieval.credentials import Credentials
from retrieval.http import create_search_app
from retrieval.mcp_server import streamable_http_app
from retrieval.metrics import CitationMetrics, RunLogMetrics, SearchMetrics
from retrieval.models import TOOL_NAME, SearchResponse
from retrieval.recording import RecordingSearcher
from retrieval.runs import MemoryRunLog
from retrieval.service import SearchService
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex
from store.model import DocumentState
from webhooks.serve import ServerThread

AGENT_KEY = "agent-key-0123456789abcdef"
FINANCE_KEY = "finance-key-0123456789abcdef"
CREDENTIALS = Credentials.from_mapping({
    "support-bot": {"key": AGENT_KEY, "labels": ["public"]},
    "finance-desk": {"key": FINANCE_KEY, "labels": ["public", "finance"]},
})
DAY = date(2027, 4, 1)
T0 = datetime(2027, 1, 1, tzinfo=UTC)
SECRET = "chargeback reserve of 5 percent"
TIMEOUT = 30.0


@pytest.fixture
def parts() -> Iterator[tuple[RecordingSearcher, CitationChecker]]:
    store = InMemoryStore()
    chunks = [
        make_chunk("refunds", 3, "4-2", text="Refunds are paid within 14 days.",
                   heading_path=["Refunds", "4.2 Late delivery"],
                   metadata={"title": "Refunds", "language": "en", "access_labels": ["public"]}),
        make_chunk("reserve", 1, "1", text=f"Finance keeps a {SECRET}.",
                   heading_path=["Reserve", "1 Reserve"],
                   metadata={"title": "Reserve", "language": "en",
                             "access_labels": ["finance"]}),
    ]
    store.write_chunks(chunks)
    for c in chunks:
        store.put_state(DocumentState(c.document_id, c.version, T0, T0, (c.chunk_id,)))
    index = InMemorySearchIndex(store)
    service = SearchService(index, None, clock=lambda: DAY)
    runs = MemoryRunLog()
    yield (RecordingSearcher(service, runs), CitationChecker(store, index, runs,
                                                              clock=lambda: DAY))
    service.close()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def server(parts: tuple[RecordingSearcher, CitationChecker], registry: CollectorRegistry
           ) -> Iterator[ServerThread]:
    searcher, checker = parts
    app = create_search_app(searcher, CREDENTIALS, registry, checker=checker,
                            citation_metrics=CitationMetrics.create(registry))
    with ServerThread(app) as server:
        yield server


def post(server: ServerThread, path: str, body: object, key: str | None = AGENT_KEY
         ) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(server.url + path, content=content, headers=headers, timeout=10)


def cite(**kw: Any) -> dict[str, Any]:
    return {"document_id": "refunds", "clause": "4.2", **kw}


def searched(server: ServerThread, key: str = AGENT_KEY) -> SearchResponse:
    response = post(server, "/search", {"question": "refunds paid late delivery"}, key)
    assert response.status_code == 200, response.text
    answer = SearchResponse.model_validate(response.json())
    assert answer.status == "ok" and answer.run_id is not None
    return answer


def test_a_search_then_its_citation_checked_over_http(
    server: ServerThread, registry: CollectorRegistry
) -> None:
    answer = searched(server)
    good = post(server, "/citations/check", {
        "run_id": answer.run_id, "citations": [cite(version=3, quote="paid within 14 days")]})
    assert good.status_code == 200, good.text
    assert CheckResponse.model_validate(good.json()).ok
    bad = post(server, "/citations/check", {
        "run_id": answer.run_id, "citations": [cite(version=2, claim="within 30 days")]})
    assert bad.status_code == 200
    checked = CheckResponse.model_validate(bad.json())
    assert not checked.ok
    assert checked.results[0].codes == ["superseded", "number_not_in_clause",
                                        "support_unchecked"]
    sample = registry.get_sample_value
    assert sample("policy_indexer_citation_replies_total",
                  {"interface": "http", "result": "ok"}) == 1
    assert sample("policy_indexer_citation_replies_total",
                  {"interface": "http", "result": "wrong"}) == 1
    assert sample("policy_indexer_citation_checks_total",
                  {"interface": "http", "result": "problem"}) == 1
    assert sample("policy_indexer_citation_problems_total",
                  {"interface": "http", "problem": "superseded"}) == 1


def test_a_run_of_another_key_is_an_unknown_run(server: ServerThread) -> None:
    answer = searched(server, FINANCE_KEY)
    response = post(server, "/citations/check",
                    {"run_id": answer.run_id, "citations": [cite()]}, AGENT_KEY)
    assert response.status_code == 404
    assert response.json()["error"] == "unknown_run"
    assert "no search run of this caller" in response.json()["detail"]


def test_labels_come_from_the_key_and_a_hidden_clause_shows_none_of_its_text(
    server: ServerThread,
) -> None:
    body = {"citations": [{"document_id": "reserve", "clause": "1"}]}
    hidden = post(server, "/citations/check", body)
    assert hidden.json()["results"][0]["problems"][0]["code"] == "not_permitted"
    assert SECRET not in hidden.text
    allowed = post(server, "/citations/check", body, FINANCE_KEY)
    assert allowed.json()["ok"] is True
    refused = post(server, "/citations/check", {**body, "labels": ["finance"]})
    assert refused.status_code == 422
    assert "labels are not accepted in the request" in refused.text


@pytest.mark.parametrize(("body", "status", "says"), [
    ({"citations": []}, 422, "citations=[]"),
    ({}, 422, "citations"),
    ({"citations": [cite(version="3")]}, 422, "citations.0.version"),
    ({"citations": [cite(version=0)]}, 422, "greater than or equal to 1"),
    ({"citations": [{"document_id": "refunds"}]}, 422, "citations.0.clause"),
    ({"citations": [cite(quote="  ")]}, 422, "citations.0.quote"),
    ({"citations": [cite(claim="a\x00b")]}, 422, "control characters"),
    ({"run_id": "not-a-run", "citations": [cite()]}, 422, "is not a run id"),
    ({"citations": [cite()] * 51}, 422, "at most 50"),
    ({"citations": [cite(page=4)]}, 422, "citations.0.page"),
    (b"[1, 2]", 400, "must be a JSON object"),
    (b"{not json", 400, "not valid JSON"),
])
def test_bad_input_is_refused_naming_it(server: ServerThread, body: object, status: int,
                                        says: str) -> None:
    response = post(server, "/citations/check", body)
    assert response.status_code == status, response.text
    assert says in response.text


def test_no_key_is_401(server: ServerThread) -> None:
    response = post(server, "/citations/check", {"citations": [cite()]}, key=None)
    assert response.status_code == 401


# --- MCP ------------------------------------------------------------------------------


@pytest.fixture
def mcp_server(parts: tuple[RecordingSearcher, CitationChecker], registry: CollectorRegistry
               ) -> Iterator[ServerThread]:
    searcher, checker = parts
    RunLogMetrics.create(registry)
    app = streamable_http_app(searcher, CREDENTIALS, metrics=SearchMetrics.create(registry),
                              checker=checker, citation_metrics=CitationMetrics.create(registry))
    with ServerThread(app) as server:
        yield server


def over_mcp(url: str, key: str, calls: list[tuple[str, dict[str, Any]]]
             ) -> tuple[types.ListToolsResult, list[types.CallToolResult]]:
    async def session() -> tuple[types.ListToolsResult, list[types.CallToolResult]]:
        with anyio.fail_after(TIMEOUT):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                tools = await client.list_tools()
                return tools, [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(session)


def test_the_mcp_tool_beside_search_policy(mcp_server: ServerThread,
                                           registry: CollectorRegistry) -> None:
    url = mcp_server.url + "/mcp"
    tools, (found,) = over_mcp(url, AGENT_KEY, [(TOOL_NAME, {"question": "refunds paid"})])
    listed = {t.name: t for t in tools.tools}
    assert set(listed) == {TOOL_NAME, CHECK_TOOL}
    check_tool = listed[CHECK_TOOL]
    assert check_tool.description == CHECK_DESCRIPTION
    assert "does NOT judge" in CHECK_DESCRIPTION and "support_unchecked" in CHECK_DESCRIPTION
    assert "labels" not in check_tool.input_schema["properties"]
    assert set(check_tool.input_schema["properties"]) == set(CheckRequest.model_fields)
    run_id = SearchResponse.model_validate(found.structured_content).run_id
    assert run_id is not None
    request = {"run_id": run_id, "citations": [cite(version=3, quote="within 14 days")]}
    _, (checked,) = over_mcp(url, AGENT_KEY, [(CHECK_TOOL, request)])
    assert not checked.is_error, checked.content
    assert CheckResponse.model_validate(checked.structured_content).ok
    _, (other, bad) = over_mcp(url, FINANCE_KEY, [(CHECK_TOOL, request),
                                                  (CHECK_TOOL, {"citations": []})])
    assert other.is_error
    assert "no search run of this caller" in str(other.content)
    assert bad.is_error
    assert "invalid arguments: citations=[]" in str(bad.content)
    assert registry.get_sample_value("policy_indexer_citation_replies_total",
                                     {"interface": "mcp", "result": "ok"}) == 1
