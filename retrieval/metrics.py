"""The search tool's metrics, declared once (``SearchMetrics.create(registry)``).

Nothing is registered at import; pass the registry in. Names, types, meanings:

- ``policy_indexer_search_latency_seconds{interface}`` histogram: wall time of one
  search as the interface saw it (query encoding, both legs, fusion, neighbours).
- ``policy_indexer_search_responses_total{interface,status}`` counter: answers by
  status (``ok``, ``no_document``, ``no_access``) and ``error`` for a search that
  raised. A rising ``no_access`` share says callers lack labels; ``no_document``
  says the library (or the threshold) does not serve the questions asked.
- ``policy_indexer_search_document_retrievals_total{document_id}`` counter: ranked
  passages returned per document (neighbours are not counted: they were not
  chosen). A document that never shows up is unnecessary or badly split.
- ``policy_indexer_search_links_dropped_total{interface}`` counter: passages returned
  with ``link: null`` because their document's path was not an ``http(s)`` URL or a
  relative path (``retrieval.provenance.safe_link``: ``javascript:``, ``data:``,
  ``//host``...). A link is otherwise always set, so null means dropped. Not 0: a
  source sends documents with a hostile or broken path (find them by ``link`` null).

The search run log's ``RunLogMetrics`` and ``check_citations``' ``CitationMetrics``
are declared below, each with its names and meanings.

Cardinality of ``document_id``: the first ``max_documents`` distinct ids (default
2,000, well above a policy library's size) get their own series; any further id
is counted under ``document_id="_other"``, so a store full of generated or
wrong ids cannot grow the scrape without bound. ``seed(ids)`` creates the
series of known documents at 0, so "never retrieved" is a visible zero.

``document_ids=False`` (``POLICY_INDEXER_SEARCH_METRICS_DOCUMENT_IDS=false``) leaves the
per-document counter out altogether: a document id, a restricted one too, then never
appears in a scrape (ids say what the library holds, even when the text is hidden).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram

from foundation.metric_names import NAMESPACE
from retrieval.models import SearchResponse

STATUSES = ("ok", "no_document", "no_access", "error")
OTHER_DOCUMENT = "_other"
DEFAULT_MAX_DOCUMENTS = 2000
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0)


@dataclass(frozen=True)
class SearchMetrics:
    latency: Histogram
    responses: Counter
    document_retrievals: Counter | None
    links_dropped: Counter
    max_documents: int = DEFAULT_MAX_DOCUMENTS
    _seen: set[str] = field(default_factory=set, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def create(
        cls, registry: CollectorRegistry, *, max_documents: int = DEFAULT_MAX_DOCUMENTS,
        document_ids: bool = True,
    ) -> SearchMetrics:
        if max_documents < 1:
            raise ValueError(f"max_documents={max_documents} must be at least 1")
        ns = NAMESPACE
        retrievals = Counter(
            "search_document_retrievals",
            "Ranked passages returned, by document (bounded; the rest under _other).",
            ["document_id"], namespace=ns, registry=registry,
        ) if document_ids else None
        return cls(
            latency=Histogram(
                "search_latency_seconds", "Wall time of one search, by interface.",
                ["interface"], namespace=ns, registry=registry, buckets=LATENCY_BUCKETS,
            ),
            responses=Counter(
                "search_responses", "Search answers by interface and status.",
                ["interface", "status"], namespace=ns, registry=registry,
            ),
            document_retrievals=retrievals,
            links_dropped=Counter(
                "search_links_dropped",
                "Passages returned without their link: not http(s) or relative (unsafe).",
                ["interface"], namespace=ns, registry=registry,
            ),
            max_documents=max_documents,
        )

    def seed(self, document_ids: Iterable[str]) -> None:
        """Create the series of these documents at 0 (within the cardinality bound)."""
        if self.document_retrievals is None:
            return
        for document_id in document_ids:
            self.document_retrievals.labels(document_id=self._document_label(document_id))

    def observe(self, interface: str, response: SearchResponse, seconds: float) -> None:
        self.latency.labels(interface=interface).observe(seconds)
        self.responses.labels(interface=interface, status=response.status).inc()
        dropped = sum(1 for p in response.passages if p.link is None)
        if dropped:
            self.links_dropped.labels(interface=interface).inc(dropped)
        if self.document_retrievals is None:
            return
        for passage in response.passages:
            if passage.via == "ranked":
                label = self._document_label(passage.document_id)
                self.document_retrievals.labels(document_id=label).inc()

    def observe_failure(self, interface: str, seconds: float) -> None:
        self.latency.labels(interface=interface).observe(seconds)
        self.responses.labels(interface=interface, status="error").inc()

    def _document_label(self, document_id: str) -> str:
        with self._lock:
            if document_id in self._seen:
                return document_id
            if len(self._seen) < self.max_documents:
                self._seen.add(document_id)
                return document_id
        return OTHER_DOCUMENT


RUN_OUTCOMES = ("recorded", "failed")
CITATION_RESULTS = ("ok", "problem")
REPLY_RESULTS = ("ok", "wrong")


@dataclass(frozen=True)
class RunLogMetrics:
    """``policy_indexer_search_runs_total{outcome}`` counter: searches whose run was
    ``recorded``, or ``failed`` to be (the answer went out with ``run_id: null``).
    Not 0 for ``failed``: the run log is unwritable (disk, Elasticsearch), and
    replies of those searches cannot be checked against their passages."""

    runs: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> RunLogMetrics:
        runs = Counter("search_runs", "Search runs by outcome of recording them.",
                       ["outcome"], namespace=NAMESPACE, registry=registry)
        for outcome in RUN_OUTCOMES:
            runs.labels(outcome=outcome)
        return cls(runs)


@dataclass(frozen=True)
class CitationMetrics:
    """What ``check_citations`` found, by interface (``http``, ``mcp``, ``cli``):

    - ``policy_indexer_citation_checks_total{interface,result}`` counter: citations
      checked, ``ok`` or ``problem`` (any code but ``support_unchecked``, which every
      citation carries);
    - ``policy_indexer_citation_problems_total{interface,problem}`` counter: problem
      codes found (a citation may have several). ``superseded`` rising: an agent cites
      an old version (the index or the agent serves an old rule), alerted on;
    - ``policy_indexer_citation_replies_total{interface,result}`` counter: checks (one
      reply's citations each), ``ok`` or ``wrong`` (at least one citation with a
      problem). ``wrong / all`` is the wrong-citation rate on the dashboard.
    """

    checks: Counter
    problems: Counter
    replies: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> CitationMetrics:
        ns = NAMESPACE
        return cls(
            checks=Counter("citation_checks", "Citations checked, by interface and result.",
                           ["interface", "result"], namespace=ns, registry=registry),
            problems=Counter("citation_problems", "Citation problems found, by code.",
                             ["interface", "problem"], namespace=ns, registry=registry),
            replies=Counter("citation_replies",
                            "Replies checked: ok, or wrong (a citation with a problem).",
                            ["interface", "result"], namespace=ns, registry=registry),
        )

    def observe(self, interface: str, problems_per_citation: Iterable[Iterable[str]]) -> None:
        wrong = False
        for codes in problems_per_citation:
            real = [c for c in codes if c != "support_unchecked"]
            self.checks.labels(interface=interface, result="problem" if real else "ok").inc()
            for code in real:
                self.problems.labels(interface=interface, problem=code).inc()
            wrong = wrong or bool(real)
        self.replies.labels(interface=interface, result="wrong" if wrong else "ok").inc()
