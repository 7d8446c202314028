"""The one interface every caller of the search tool goes through.

``Searcher`` is what the HTTP app, the MCP server, the CLI and ``eval`` program
against; ``retrieval.service.SearchService`` implements it over a store, and
tests use small fakes of it. The caller's labels are a separate argument, never
part of the request, so no interface can take them from a request body (rule 8).

``MeteredSearcher`` wraps any searcher with the search metrics, so the HTTP app
and the MCP server measure the same thing in the same place.
"""

from __future__ import annotations

import time
from typing import Protocol

from retrieval.metrics import SearchMetrics
from retrieval.models import SearchRequest, SearchResponse


class Searcher(Protocol):
    def search(self, request: SearchRequest, caller_labels: frozenset[str]) -> SearchResponse:
        """Answer ``request`` with only what a caller holding ``caller_labels`` may see."""
        ...


class MeteredSearcher:
    """A ``Searcher`` that records latency, status and retrieved documents of another.

    ``interface`` (``http``, ``mcp``, ``cli``...) becomes a label, so the two
    servers can be told apart on one dashboard. A search that raises is counted
    with status ``error`` and re-raised.
    """

    def __init__(self, searcher: Searcher, metrics: SearchMetrics, interface: str) -> None:
        self._searcher = searcher
        self._metrics = metrics
        self._interface = interface

    def search(self, request: SearchRequest, caller_labels: frozenset[str]) -> SearchResponse:
        started = time.perf_counter()
        try:
            response = self._searcher.search(request, caller_labels)
        except Exception:
            self._metrics.observe_failure(self._interface, time.perf_counter() - started)
            raise
        self._metrics.observe(self._interface, response, time.perf_counter() - started)
        return response
