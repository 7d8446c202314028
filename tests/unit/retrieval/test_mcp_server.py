"""The search_policy MCP tool through the ``mcp`` package's own client.

Over stdio (a real child process from tests/support/mcp_stdio_server.py that
resolved its own key at start) and over streamable HTTP (a real uvicorn server
on loopback, bearer key per request): the tool is listed with its description,
annotations and typed output schema; a call returns structured passages with
provenance; a caller without the label gets no labelled passage.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from prometheus_client import CollectorRegistry
from support.mcp_searcher import (
    FINANCE_MARKER,
    PUBLIC_MARKER,
    LabelFilteringSearcher,
    sample_passages,
)

from retrieval.credentials import Credentials, UnknownKey
from retrieval.mcp_server import labels_for_key, streamable_http_app
from retrieval.metrics import SearchMetrics
from retrieval.models import TOOL_DESCRIPTION, TOOL_NAME, SearchRequest, SearchResponse
from webhooks.serve import ServerThread

AGENT_KEY = "agent-key-0123456789abcdef"
FINANCE_KEY = "finance-key-0123456789abcdef"
CONFIG = {
    "support-bot": {"key": AGENT_KEY, "labels": ["public"]},
    "finance-desk": {"key": FINANCE_KEY, "labels": ["public", "finance"]},
}
CREDENTIALS = Credentials.from_mapping(CONFIG)
TESTS = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0
REFUND_QUESTION = {"question": "Do you refund the delivery fee when it is late?", "k": 3}
FINANCE_QUESTION = {"question": "What chargeback reserve applies?"}


def check_listed_tool(tools: types.ListToolsResult) -> None:
    [tool] = tools.tools
    assert tool.name == TOOL_NAME
    assert tool.description == TOOL_DESCRIPTION
    assert tool.annotations is not None
    assert tool.annotations.read_only_hint is True
    assert tool.annotations.idempotent_hint is True
    assert tool.annotations.destructive_hint is False
    assert tool.annotations.open_world_hint is False
    assert tool.output_schema == SearchResponse.model_json_schema(mode="serialization")
    assert tool.input_schema["additionalProperties"] is False
    assert set(tool.input_schema["properties"]) == set(SearchRequest.model_fields)
    assert "labels" not in tool.input_schema["properties"]


def structured(result: types.CallToolResult) -> SearchResponse:
    assert not result.is_error, result.content
    response = SearchResponse.model_validate(result.structured_content)
    [text] = result.content
    assert isinstance(text, types.TextContent)
    assert SearchResponse.model_validate_json(text.text) == response
    return response


def check_refund_answer(response: SearchResponse) -> None:
    assert response.status == "ok"
    [passage] = response.passages
    assert (passage.document_id, passage.clause, passage.version) == ("refunds", "4.2", 3)
    assert passage.title == "Refunds"
    assert passage.link == "policies/refunds.md#4.2"
    assert passage.effective_date is not None
    assert PUBLIC_MARKER in passage.text


def error_text(result: types.CallToolResult) -> str:
    assert result.is_error
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


# --- stdio ----------------------------------------------------------------------------


def stdio_params(key: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "support.mcp_stdio_server"],
        env={"PYTHONPATH": str(TESTS), "POLICY_SEARCH_CREDENTIALS": json.dumps(CONFIG),
             "POLICY_SEARCH_KEY": key},
    )


def test_stdio_lists_the_tool_and_answers_with_the_processes_own_labels() -> None:
    async def session() -> None:
        with anyio.fail_after(TIMEOUT):
            async with Client(stdio_params(AGENT_KEY)) as client:
                check_listed_tool(await client.list_tools())
                check_refund_answer(structured(
                    await client.call_tool(TOOL_NAME, REFUND_QUESTION)))
                denied = structured(await client.call_tool(TOOL_NAME, FINANCE_QUESTION))
                assert denied.status == "no_access"
                assert denied.passages == []
                smuggled = await client.call_tool(
                    TOOL_NAME, {**FINANCE_QUESTION, "labels": ["finance"]})
                assert "labels" in error_text(smuggled)
                assert FINANCE_MARKER not in error_text(smuggled)
                bad_k = error_text(await client.call_tool(TOOL_NAME, {"question": "x", "k": 50}))
                assert "k=50" in bad_k

    anyio.run(session)


def test_stdio_with_the_finance_key_sees_the_finance_passage() -> None:
    async def session() -> SearchResponse:
        with anyio.fail_after(TIMEOUT):
            async with Client(stdio_params(FINANCE_KEY)) as client:
                return structured(await client.call_tool(TOOL_NAME, FINANCE_QUESTION))

    response = anyio.run(session)
    assert response.status == "ok"
    assert FINANCE_MARKER in response.passages[0].text


def test_the_stdio_key_must_be_a_configured_one() -> None:
    with pytest.raises(UnknownKey, match="configured API key"):
        labels_for_key(CREDENTIALS, "not-a-configured-key-000")


# --- streamable HTTP ------------------------------------------------------------------


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def server(registry: CollectorRegistry) -> Iterator[ServerThread]:
    metrics = SearchMetrics.create(registry)
    app = streamable_http_app(LabelFilteringSearcher(sample_passages()), CREDENTIALS,
                              metrics=metrics)
    with ServerThread(app) as server:
        yield server


def over_http(url: str, key: str, mode: str, calls: list[dict[str, Any]]
              ) -> tuple[types.ListToolsResult, list[types.CallToolResult]]:
    async def session() -> tuple[types.ListToolsResult, list[types.CallToolResult]]:
        with anyio.fail_after(TIMEOUT):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http, \
                    Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                tools = await client.list_tools()
                return tools, [await client.call_tool(TOOL_NAME, c) for c in calls]

    return anyio.run(session)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_http_lists_the_tool_and_binds_labels_from_the_bearer_key(
    server: ServerThread, registry: CollectorRegistry, mode: str
) -> None:
    url = server.url + "/mcp"
    tools, (refund, finance) = over_http(url, AGENT_KEY, mode, [REFUND_QUESTION,
                                                               FINANCE_QUESTION])
    check_listed_tool(tools)
    check_refund_answer(structured(refund))
    denied = structured(finance)
    assert denied.status == "no_access"
    assert FINANCE_MARKER not in json.dumps(denied.model_dump(mode="json"))

    _, (allowed,) = over_http(url, FINANCE_KEY, mode, [FINANCE_QUESTION])
    answer = structured(allowed)
    assert answer.status == "ok"
    assert FINANCE_MARKER in answer.passages[0].text
    for status, count in (("ok", 2), ("no_access", 1)):
        assert registry.get_sample_value(
            "policy_indexer_search_responses_total", {"interface": "mcp", "status": status}
        ) == count


def test_http_without_a_known_key_is_401(server: ServerThread) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    missing = httpx.post(server.url + "/mcp", json=init, headers=headers)
    assert missing.status_code == 401
    assert "no API key" in missing.json()["detail"]
    unknown = httpx.post(server.url + "/mcp", json=init,
                         headers={**headers, "Authorization": "Bearer not-a-known-key-00000"})
    assert unknown.status_code == 401
    assert "not known" in unknown.json()["detail"]
