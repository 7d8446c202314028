"""Every search a run: a ``Searcher`` wrapper that records each answer in a ``RunLog``.

``RecordingSearcher(searcher, run_log)`` answers as ``searcher`` does, records the
run (``retrieval.runs``) and returns the answer with its ``run_id``. It sits at the
interface level, like ``MeteredSearcher``: the ranking (``retrieval.service``)
knows nothing of runs.

The caller's key id comes through ``search_for`` (``retrieval.searcher.search_as``
reaches it, and ``MeteredSearcher`` passes it on); a plain ``search(request,
labels)`` (the command line) records under ``local_key_id`` (``@cli``: no API key
id can start with ``@``, so no HTTP caller can read those runs).

A run log that cannot be written never fails the search: the failure is logged,
counted (``policy_indexer_search_runs_total{outcome="failed"}``) and the answer
goes out with ``run_id: null``. A search that raises records nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import structlog

from retrieval.credentials import Caller
from retrieval.metrics import RunLogMetrics
from retrieval.models import SearchRequest, SearchResponse
from retrieval.no_access import NoAccessGate
from retrieval.runs import RunLog, RunPassage, SearchRun, new_run_id, text_hash, utcnow
from retrieval.searcher import Searcher, TellsNoAccess, search_as

log = structlog.get_logger(__name__)

LOCAL_KEY_ID = "@cli"


class RecordingSearcher:
    """A ``Searcher`` (and ``SearchesForCaller``) whose every answer is a recorded run."""

    def __init__(
        self,
        searcher: Searcher,
        run_log: RunLog,
        *,
        metrics: RunLogMetrics | None = None,
        clock: Callable[[], datetime] = utcnow,
        local_key_id: str = LOCAL_KEY_ID,
    ) -> None:
        self._searcher = searcher
        self.run_log = run_log
        self._metrics = metrics
        self._clock = clock
        self._local = Caller(local_key_id, frozenset())

    def search(self, request: SearchRequest, caller_labels: frozenset[str]) -> SearchResponse:
        response = self._searcher.search(request, caller_labels)
        return self.record(request, self._local.key_id, caller_labels, response)

    def search_telling_no_access(
        self, request: SearchRequest, caller_labels: frozenset[str],
        may_tell: Callable[[], bool],
    ) -> SearchResponse:
        inner = self._searcher
        if isinstance(inner, TellsNoAccess):
            response = inner.search_telling_no_access(request, caller_labels, may_tell)
        else:
            response = inner.search(request, caller_labels)
        return self.record(request, self._local.key_id, caller_labels, response)

    def search_for(
        self, request: SearchRequest, caller: Caller, gate: NoAccessGate | None
    ) -> SearchResponse:
        response = search_as(self._searcher, request, caller, gate)
        return self.record(request, caller.key_id, caller.labels, response)

    def record(self, request: SearchRequest, key_id: str, labels: frozenset[str],
               response: SearchResponse) -> SearchResponse:
        """``response`` with the id of its run, or with ``run_id: null`` if the log failed."""
        run = SearchRun(
            run_id=new_run_id(), key_id=key_id, at=self._clock(), question=request.question,
            scope=tuple(request.scope), as_of=response.as_of, labels=tuple(sorted(labels)),
            status=response.status,
            passages=tuple(
                RunPassage(p.chunk_id, p.document_id, p.clause, p.version, p.via,
                           text_hash(p.text))
                for p in response.passages),
        )
        try:
            self.run_log.record(run)
        except Exception as exc:  # any failure of the log: the answer stands
            log.error("search run not recorded", key_id=key_id,
                      error=f"{type(exc).__name__}: {exc}")
            if self._metrics is not None:
                self._metrics.runs.labels(outcome="failed").inc()
            return response.model_copy(update={"run_id": None})
        if self._metrics is not None:
            self._metrics.runs.labels(outcome="recorded").inc()
        return response.model_copy(update={"run_id": run.run_id})
