"""POST /search and the MCP tool over the real SearchService on a SQLite store.

The fake searcher proves the interfaces; this proves they carry the real
service's answers: labels from the key reach the store's permission filter,
and the provenance the service builds arrives field for field.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client import CollectorRegistry
from support.chunks import make_chunk

from chunker.model import Chunk
from retrieval.credentials import Credentials
from retrieval.http import create_search_app
from retrieval.mcp_server import streamable_http_app
from retrieval.models import TOOL_NAME, SearchResponse
from retrieval.no_access import NoAccessGate
from retrieval.service import SearchService
from store.model import DocumentState
from store.sqlite import SQLiteStore
from store.sqlite_search import SQLiteSearchIndex
from webhooks.serve import ServerThread

AGENT_KEY = "agent-key-0123456789abcdef"
FINANCE_KEY = "finance-key-0123456789abcdef"
TOLD_KEY = "told-key-0123456789abcdef"
CREDENTIALS = Credentials.from_mapping({
    "support-bot": {"key": AGENT_KEY, "labels": ["agents"]},
    "finance-desk": {"key": FINANCE_KEY, "labels": ["agents", "finance"]},
    "triage-bot": {"key": TOLD_KEY, "labels": ["agents"], "no_access": True},
})
DAY = date(2026, 12, 1)
T0 = datetime(2026, 11, 1, tzinfo=UTC)
REFUND = "Refund the delivery fee when the courier is more than two hours late."
RESERVE = "Marketplace sellers keep a chargeback reserve of five percent for ninety days."


def chunk(doc: str, section: str, text: str, **meta: Any) -> Chunk:
    return make_chunk(doc, 2, section, text=text, heading_path=[f"{doc} policy", section],
                      metadata={"title": f"{doc} policy", "language": "en",
                                "source_path": f"policies/{doc}.md", **meta})


@pytest.fixture
def service(sqlite_store: SQLiteStore) -> SearchService:
    chunks = [
        chunk("refunds", "late-delivery", REFUND, access_labels=["agents"],
              valid_from=date(2026, 1, 1)),
        chunk("reserves", "chargeback-reserve", RESERVE, access_labels=["agents", "finance"]),
    ]
    sqlite_store.write_chunks(chunks)
    for c in chunks:
        sqlite_store.put_state(DocumentState(c.document_id, 2, T0, T0, (c.chunk_id,)))
    return SearchService(SQLiteSearchIndex(sqlite_store), None, clock=lambda: DAY)


def ask(server: ServerThread, key: str, question: str) -> SearchResponse:
    response = httpx.post(server.url + "/search", json={"question": question, "k": 3},
                          headers={"Authorization": f"Bearer {key}"}, timeout=10)
    assert response.status_code == 200, response.text
    return SearchResponse.model_validate(response.json())


def test_post_search_carries_the_services_answer_under_the_keys_labels(
    service: SearchService,
) -> None:
    app = create_search_app(service, CREDENTIALS, CollectorRegistry(), gate=NoAccessGate())
    with ServerThread(app) as server:
        refund = ask(server, AGENT_KEY, "Is the delivery fee refunded when the courier is late?")
        assert refund.status == "ok"
        top = refund.passages[0]
        assert (top.document_id, top.version, top.title) == ("refunds", 2, "refunds policy")
        assert top.text == REFUND
        assert top.heading_path == ["refunds policy", "late-delivery"]
        assert top.valid_from == date(2026, 1, 1)
        assert top.link is not None and top.link.startswith("policies/refunds.md#")
        assert all(p.document_id != "reserves" for p in refund.passages)

        question = "What chargeback reserve do marketplace sellers keep?"
        denied = ask(server, AGENT_KEY, question)
        assert denied.status == "no_document"  # no_access is off for this key
        assert denied.passages == []
        told = ask(server, TOLD_KEY, question)  # the same labels, no_access on
        assert told.status == "no_access" and told.passages == []
        allowed = ask(server, FINANCE_KEY, question)
        assert allowed.status == "ok"
        assert allowed.passages[0].text == RESERVE


def test_the_mcp_tool_carries_the_services_answer_under_the_keys_labels(
    service: SearchService,
) -> None:
    app = streamable_http_app(service, CREDENTIALS, gate=NoAccessGate())

    async def call(url: str, key: str) -> SearchResponse:
        with anyio.fail_after(30):
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http, \
                    Client(streamable_http_client(url, http_client=http)) as client:
                result = await client.call_tool(
                    TOOL_NAME, {"question": "chargeback reserve for marketplace sellers"})
                assert not result.is_error, result.content
                return SearchResponse.model_validate(result.structured_content)

    with ServerThread(app) as server:
        assert anyio.run(call, server.url + "/mcp", AGENT_KEY).status == "no_document"
        assert anyio.run(call, server.url + "/mcp", TOLD_KEY).status == "no_access"
        allowed = anyio.run(call, server.url + "/mcp", FINANCE_KEY)
    assert allowed.status == "ok"
    assert allowed.passages[0].document_id == "reserves"
