"""The one interface every caller of the search tool goes through.

``Searcher`` is what the HTTP app, the MCP server, the CLI and ``eval`` program
against; ``retrieval.service.SearchService`` implements it over a store, and
tests use small fakes of it. The caller's labels are a separate argument, never
part of the request, so no interface can take them from a request body (rule 8).

``MeteredSearcher`` wraps any searcher with the search metrics, so the HTTP app
and the MCP server measure the same thing in the same place.

``no_access`` is off by default: ``search`` never answers it. A searcher that can
tell it (``TellsNoAccess``: ``SearchService``) does so only through
``search_telling_no_access``, which the interfaces call through ``search_as`` for
a caller whose key allows it, within its rate (``retrieval.no_access``).

A wrapper that needs the caller itself, not only its labels (``SearchesForCaller``:
the run log's ``RecordingSearcher`` keeps the key id) is reached through
``search_as`` too; ``MeteredSearcher`` passes the caller on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from retrieval.credentials import Caller
from retrieval.metrics import SearchMetrics
from retrieval.models import SearchRequest, SearchResponse
from retrieval.no_access import NoAccessGate


class Searcher(Protocol):
    def search(self, request: SearchRequest, caller_labels: frozenset[str]) -> SearchResponse:
        """Answer ``request`` with only what a caller holding ``caller_labels`` may see."""
        ...


@runtime_checkable
class TellsNoAccess(Protocol):
    def search_telling_no_access(
        self, request: SearchRequest, caller_labels: frozenset[str],
        may_tell: Callable[[], bool],
    ) -> SearchResponse:
        """``search``; ``no_access`` instead of ``no_document`` only if ``may_tell()``."""
        ...


@runtime_checkable
class SearchesForCaller(Protocol):
    def search_for(
        self, request: SearchRequest, caller: Caller, gate: NoAccessGate | None
    ) -> SearchResponse:
        """``search_as`` through a wrapper that needs the caller itself (its key id: the
        run log, ``retrieval.recording``), not only its labels."""
        ...


def search_as(
    searcher: Searcher, request: SearchRequest, caller: Caller, gate: NoAccessGate | None
) -> SearchResponse:
    """The answer for ``caller``: told ``no_access`` only if its key and ``gate`` allow."""
    if isinstance(searcher, SearchesForCaller):
        return searcher.search_for(request, caller, gate)
    if gate is not None and caller.no_access_per_minute is not None and isinstance(
        searcher, TellsNoAccess
    ):
        return searcher.search_telling_no_access(
            request, caller.labels, lambda: gate.permits(caller))
    return searcher.search(request, caller.labels)


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
        return self._metered(lambda: self._searcher.search(request, caller_labels))

    def search_telling_no_access(
        self, request: SearchRequest, caller_labels: frozenset[str],
        may_tell: Callable[[], bool],
    ) -> SearchResponse:
        inner = self._searcher
        if isinstance(inner, TellsNoAccess):
            return self._metered(
                lambda: inner.search_telling_no_access(request, caller_labels, may_tell))
        return self.search(request, caller_labels)

    def search_for(
        self, request: SearchRequest, caller: Caller, gate: NoAccessGate | None
    ) -> SearchResponse:
        return self._metered(lambda: search_as(self._searcher, request, caller, gate))

    def _metered(self, search: Callable[[], SearchResponse]) -> SearchResponse:
        started = time.perf_counter()
        try:
            response = search()
        except Exception:
            self._metrics.observe_failure(self._interface, time.perf_counter() - started)
            raise
        self._metrics.observe(self._interface, response, time.perf_counter() - started)
        return response
