"""``/metrics`` on the search port is not for anyone who can reach it: it names
restricted documents.

The scrape names documents (restricted ones too), lag series and unreadable files'
ids. On the search port it is served only with ``POLICY_INDEXER_SEARCH_METRICS_TOKEN``
set, and then only to a bearer of that token; unset, the path is 404 there (the
process's loopback metrics server still serves it). ``document_ids=False`` leaves
the per-document series out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client import CollectorRegistry
from pydantic import ValidationError
from support.chunks import make_chunk
from support.mcp_searcher import LabelFilteringSearcher, sample_passages
from support.stores import add_current

from policy_indexer.runtime.search import search_app
from policy_indexer.settings import Settings
from retrieval.credentials import Credentials
from retrieval.http import create_search_app
from retrieval.metrics import SearchMetrics
from retrieval.service import SearchService
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex
from webhooks.serve import ServerThread

KEY = "agent-key-0123456789abcdef"
KEYS_JSON = json.dumps({"support-bot": {"key": KEY, "labels": ["public"]}})
CREDENTIALS = Credentials.from_json(KEYS_JSON)
TOKEN = "metrics-token-0123456789abcdef"


def search(server: ServerThread, question: str) -> httpx.Response:
    return httpx.post(server.url + "/search", json={"question": question}, timeout=10,
                      headers={"Authorization": f"Bearer {KEY}"})


def scrape(server: ServerThread, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.get(server.url + "/metrics", headers=headers, timeout=10)


def test_without_a_token_metrics_are_not_served_on_the_search_port() -> None:
    app = create_search_app(LabelFilteringSearcher(sample_passages()), CREDENTIALS,
                            CollectorRegistry())
    with ServerThread(app) as server:
        assert search(server, "refund the delivery fee").status_code == 200
        assert scrape(server, None).status_code == 404
        assert scrape(server, KEY).status_code == 404  # a search key is no metrics key


def test_with_a_token_only_its_bearer_gets_the_scrape() -> None:
    app = create_search_app(LabelFilteringSearcher(sample_passages()), CREDENTIALS,
                            CollectorRegistry(), metrics_token=TOKEN)
    with ServerThread(app) as server:
        assert search(server, "refund the delivery fee").status_code == 200
        for wrong in (None, KEY, TOKEN[:-1], TOKEN + "x", TOKEN.upper()):
            refused = scrape(server, wrong)
            assert refused.status_code == 401, wrong
            assert refused.headers["WWW-Authenticate"].startswith("Bearer")
            assert "policy_indexer" not in refused.text
        allowed = scrape(server, TOKEN)
        assert allowed.status_code == 200
        assert 'policy_indexer_search_document_retrievals_total{document_id="refunds"}' in (
            allowed.text)


def test_a_short_token_is_refused() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        create_search_app(LabelFilteringSearcher([]), CREDENTIALS, CollectorRegistry(),
                          metrics_token="short")
    with pytest.raises(ValidationError, match="16 bytes"):
        Settings(search_metrics_token="short")


def test_document_ids_off_leaves_no_document_series() -> None:
    registry = CollectorRegistry()
    metrics = SearchMetrics.create(registry, document_ids=False)
    metrics.seed(["staff-only"])
    app = create_search_app(LabelFilteringSearcher(sample_passages()), CREDENTIALS, registry,
                            metrics=metrics, metrics_token=TOKEN)
    with ServerThread(app) as server:
        assert search(server, "refund the delivery fee").json()["status"] == "ok"
        text = scrape(server, TOKEN).text
    assert "document_retrievals" not in text and "staff-only" not in text
    assert 'policy_indexer_search_responses_total{interface="http",status="ok"} 1.0' in text


@pytest.fixture
def service() -> Iterator[SearchService]:
    store = InMemoryStore()
    add_current(store, [make_chunk("staff-only", 1, "codes", text="override codes",
                                   metadata={"title": "Codes", "access_labels": ["staff"]})])
    svc = SearchService(InMemorySearchIndex(store), None)
    yield svc
    svc.close()


@pytest.mark.parametrize("token", [None, TOKEN], ids=["no-token", "token"])
def test_the_processes_search_app_follows_the_settings(
    service: SearchService, token: str | None
) -> None:
    settings = Settings(search_api_keys=KEYS_JSON, search_metrics_token=token,
                        search_metrics_document_ids=False)
    registry = CollectorRegistry()
    with ServerThread(search_app(settings, service, registry)) as server:
        assert search(server, "override codes").status_code == 200
        assert scrape(server, None).status_code == (404 if token is None else 401)
        if token is not None:
            assert "staff-only" not in scrape(server, token).text
    assert registry.get_sample_value("policy_indexer_search_responses_total",
                                     {"interface": "http", "status": "no_document"}) == 1
