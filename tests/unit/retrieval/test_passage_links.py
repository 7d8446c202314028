"""A passage's link is only an http(s) URL or a relative path.

A signed webhook decides ``document.path``; it came back unchanged as the passage
``link``, which an agent's UI may render as an anchor. Anything else is dropped
(``link: null``) and counted in ``policy_indexer_search_links_dropped_total``.
"""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry
from support.chunks import make_chunk
from support.stores import add_current

from retrieval.metrics import SearchMetrics
from retrieval.models import SearchRequest
from retrieval.provenance import safe_link
from retrieval.searcher import MeteredSearcher
from retrieval.service import SearchService
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex

DROPPED = [
    pytest.param("javascript:alert(document.cookie)", id="javascript"),
    pytest.param("JaVaScRiPt:alert(1)", id="mixed-case"),
    pytest.param("data:text/html;base64,PHNjcmlwdD4=", id="data"),
    pytest.param("vbscript:msgbox(1)", id="vbscript"),
    pytest.param(" javascript:alert(1)", id="leading-space"),
    pytest.param("\x01javascript:alert(1)", id="leading-control"),
    pytest.param("\u00a0javascript:alert(1)", id="leading-nbsp"),
    pytest.param("java\tscript:alert(1)", id="tab-inside"),
    pytest.param("java\nscript:alert(1)", id="newline-inside"),
    pytest.param("//evil.example/refunds", id="protocol-relative"),
    pytest.param("/\\evil.example/refunds", id="slash-backslash"),
    pytest.param("\\\\evil.example/refunds", id="backslashes"),
    pytest.param("file:///etc/passwd", id="file"),
    pytest.param("http:evil.example", id="http-without-slashes"),
    pytest.param("https:///refunds", id="https-without-host"),
]
KEPT = [
    pytest.param("https://policies.example.com/refunds", id="https"),
    pytest.param("HTTP://policies.example.com/refunds", id="http-upper-case"),
    pytest.param("refunds/index.md", id="relative"),
    pytest.param("/policies/refunds.md", id="root-relative"),
    pytest.param("policies/late delivery.md", id="relative-with-space"),
]


@pytest.mark.parametrize("path", DROPPED)
def test_a_link_that_is_not_http_or_relative_is_dropped(path: str) -> None:
    assert safe_link(path) is None


@pytest.mark.parametrize("path", KEPT)
def test_http_https_and_relative_links_are_kept(path: str) -> None:
    assert safe_link(path) == path


def test_a_search_returns_the_passage_without_its_link_and_counts_it() -> None:
    store = InMemoryStore()
    add_current(store, [
        make_chunk("evil", 1, "fees", text="refund of the delivery fee",
                   metadata={"title": "Fees", "language": "en",
                             "source_path": "javascript:alert(1)"}),
        make_chunk("javascript:alert(2)", 1, "fees", text="refund of the delivery fee too",
                   metadata={"title": "Fees", "language": "en"}),  # no path: the id is used
        make_chunk("good", 1, "fees", text="refund of the delivery fee again",
                   metadata={"title": "Fees", "language": "en",
                             "source_path": "https://policies.example.com/fees"}),
    ])
    registry = CollectorRegistry()
    searcher = MeteredSearcher(SearchService(InMemorySearchIndex(store), None),
                               SearchMetrics.create(registry), "http")
    response = searcher.search(SearchRequest(question="refund delivery fee"), frozenset())
    links = {p.document_id: p.link for p in response.passages}
    assert links == {"evil": None, "javascript:alert(2)": None,
                     "good": "https://policies.example.com/fees#fees"}
    assert registry.get_sample_value("policy_indexer_search_links_dropped_total",
                                     {"interface": "http"}) == 2
