"""search_policy built from settings: encoder, cache, service, backfill and servers.

The same service answers every interface (``policy-indexer search``,
``POST /search``, the MCP tool) on both modes; the interfaces differ only in
where the caller's labels come from: the command line's ``--labels`` (a person
at the machine, who can read the index files anyway), an API key mapped to a
label set in ``search_api_keys`` (HTTP and MCP).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp, Receive, Scope, Send

from embeddings.cache import CachedEncoder, EmbeddingCache
from embeddings.errors import EncoderSetupError
from embeddings.metrics import EmbeddingMetrics
from embeddings.registry import encoder_by_name
from embeddings.views import DEFAULT_VIEWS, DenseView, ViewSpec, parse_view_specs, whole
from policy_indexer.runtime.backends import Backends, open_backends
from policy_indexer.runtime.freshness import PassageFreshness
from policy_indexer.runtime.http import process_registry
from policy_indexer.runtime.parts import CallbackPart, Supervisor, ThreadPart
from policy_indexer.runtime.runner import ProbeServer, Running, run_parts
from policy_indexer.runtime.servers import UvicornThread
from policy_indexer.runtime.sources import open_configured_source
from policy_indexer.settings import Settings
from retrieval.citations import CheckRequest, CheckResponse, CitationChecker
from retrieval.credentials import Caller, Credentials, CredentialsError
from retrieval.http import create_search_app
from retrieval.metrics import CitationMetrics, RunLogMetrics, SearchMetrics
from retrieval.models import SearchRequest, SearchResponse
from retrieval.no_access import NoAccessGate
from retrieval.recording import LOCAL_KEY_ID, RecordingSearcher
from retrieval.runs import RunLog
from retrieval.searcher import Searcher, TellsNoAccess
from retrieval.service import SearchService
from store.base import Store
from store.errors import StoreError
from store.search_terms import embed_windows

if TYPE_CHECKING:
    from retrieval.eval import EvalReport
    from retrieval.rerank import Reranker

log = structlog.get_logger(__name__)


class SearchNotConfigured(ValueError):
    """A search setting is missing or unusable; the message names it."""


def view_specs(settings: Settings) -> list[ViewSpec]:
    """The configured dense views: ``encoders``, else the default (``search_encoder``
    names the encoder of the default, or ``none`` for the keyword leg alone)."""
    if settings.encoders is not None:
        return parse_view_specs(settings.encoders)
    if settings.search_encoder == "none":
        return []
    return parse_view_specs(DEFAULT_VIEWS if settings.search_encoder == "minilm"
                            else settings.search_encoder)


def make_views(settings: Settings, cache: EmbeddingCache,
               metrics: EmbeddingMetrics | None) -> list[DenseView]:
    """The dense views, each encoder built once (and checked now: a missing model file is
    a one-line error at start) behind the one passage cache.

    Only for the default list (``encoders`` unset), a view after the first whose model
    files are not installed (``scripts/install --models``: a machine without Maven) is
    left out with a warning, so a plain ``pip install`` still searches; a configured list
    is what it says, and a missing file stops the start.
    """
    encoders: dict[str, CachedEncoder] = {}
    views = []
    for n, spec in enumerate(view_specs(settings)):
        if spec.name not in encoders:
            try:
                inner = encoder_by_name(spec.name, threads=settings.embed_threads)
            except EncoderSetupError as exc:
                if settings.encoders is not None or n == 0:
                    raise
                log.warning("default dense view left out: its model is not installed",
                            view=spec.name, error=str(exc))
                continue
            encoders[spec.name] = CachedEncoder(inner, cache, metrics)
        windows = whole if spec.shape is None else functools.partial(
            embed_windows, words=spec.shape.words, stride=spec.shape.stride)
        views.append(DenseView(encoders[spec.name], spec.shape, windows, spec.weight,
                               spec.languages))
    return views


def make_reranker(settings: Settings) -> Reranker | None:
    """The cross-encoder of ``reranker_path``, checked now (a bad file fails the start)."""
    path, sha256, threshold = (settings.reranker_path, settings.reranker_sha256,
                               settings.reranker_threshold)
    if path is None or sha256 is None or threshold is None:  # the settings require all three
        return None
    from retrieval.rerank import OnnxCrossEncoder, RerankerSetupError  # noqa: PLC0415

    try:
        return OnnxCrossEncoder(path, sha256=sha256, threshold=threshold,
                                max_length=settings.reranker_max_length)
    except RerankerSetupError as exc:
        raise SearchNotConfigured(f"POLICY_INDEXER_RERANKER_PATH: {exc}") from exc


@dataclass
class SearchParts:
    """What a search process holds open; ``close`` releases it.

    ``run_log``: the mode's search run log (None when runs are not recorded: ``embed``,
    ``eval``); ``checker``: ``check_citations`` over the same index and run log."""

    service: SearchService
    encoder: CachedEncoder | None
    freshness: PassageFreshness | None
    close: Callable[[], None]
    run_log: RunLog | None = None
    checker: CitationChecker | None = None
    views: list[DenseView] = field(default_factory=list)  # the first one's encoder: encoder

    def recording(self, registry: CollectorRegistry | None = None) -> Searcher:
        """The service, each answer recorded as a run (with ``run_id``) when there is a log."""
        if self.run_log is None:
            return self.service
        metrics = RunLogMetrics.create(registry) if registry is not None else None
        return RecordingSearcher(self.service, self.run_log, metrics=metrics)

    def freshness_part(self, settings: Settings) -> ThreadPart | None:
        """The source listed again every ``monitor_interval_seconds`` (long-running processes)."""
        fresh = self.freshness
        if fresh is None:
            return None
        return ThreadPart("passage freshness",
                          lambda: fresh.run(settings.monitor_interval_seconds), fresh.request_stop)


def search_service(settings: Settings, backends: Backends,
                   registry: CollectorRegistry | None = None, *,
                   freshness: bool = True, rerank: bool = True,
                   runs: bool = True) -> SearchParts:
    """The service over the mode's index, its queries encoded through the cache, and
    (``runs``) the search run log and the citation checker beside it.

    With a source configured, every passage says whether its document is behind
    the source (listed once here; ``freshness_part`` keeps it current). The
    reranker, where configured (and ``rerank``), is loaded first and once.
    """
    reranker = make_reranker(settings) if rerank else None
    index = backends.search_index()
    views: list[DenseView] = []
    closers: list[Callable[[], None]] = []
    if view_specs(settings):
        cache = backends.embedding_cache()
        closers.append(cache.close)
        metrics = EmbeddingMetrics.create(registry) if registry is not None else None
        views = make_views(settings, cache, metrics)
    cached = views[0].encoder if views else None
    assert cached is None or isinstance(cached, CachedEncoder)
    fresh: PassageFreshness | None = None
    if freshness and settings.source_kind is not None:
        source = open_configured_source(settings)
        closers.append(source.close)
        fresh = PassageFreshness(source, backends.store)
        fresh.refresh()
    options = {} if settings.search_threshold is None else {
        "threshold": settings.search_threshold, "keyword_threshold": settings.search_threshold}
    service = SearchService(index, None, views=views, freshness=fresh, reranker=reranker,
                            reranker_candidates=settings.reranker_candidates,
                            **options)  # type: ignore[arg-type]

    run_log: RunLog | None = None
    checker: CitationChecker | None = None
    if runs:
        run_log = backends.search_run_log()
        closers.append(run_log.close)
        checker = CitationChecker(backends.store, index, run_log)

    def close() -> None:
        service.close()  # its question-encoding thread
        for closer in closers:
            closer()

    return SearchParts(service, cached, fresh, close, run_log, checker, views)


def credentials(settings: Settings) -> Credentials:
    """The API keys and their labels; ``SearchNotConfigured`` names the setting."""
    # A ..._FILE was read into search_api_keys when the settings loaded (the secret-file rule).
    if settings.search_api_keys is None:
        raise SearchNotConfigured(
            "no search API key configured: set POLICY_INDEXER_SEARCH_API_KEYS to "
            '\'{"<key-id>": {"key": "<secret>", "labels": ["public"]}}\' (or ..._FILE)'
        )
    where = "POLICY_INDEXER_SEARCH_API_KEYS"
    if settings.search_api_keys_file is not None:
        where = f"{where}_FILE={str(settings.search_api_keys_file)!r}"
    text = settings.search_api_keys.get_secret_value()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SearchNotConfigured(f"{where} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise SearchNotConfigured(f"{where} must be a JSON object of key ids")
    try:
        return Credentials.from_mapping(data)
    except CredentialsError as exc:
        raise SearchNotConfigured(f"{where}: {exc}") from exc


def backfill_part(settings: Settings, backends: Backends, views: Sequence[DenseView],
                  ) -> ThreadPart:
    """The vector backfill of every view as a part: chunks are keyword-searchable at once,
    vectors follow."""
    from embeddings.backfill import VectorBackfill, ViewBackfills  # noqa: PLC0415

    index = backends.search_index()
    backfills = ViewBackfills([
        VectorBackfill(index, _cached(view), batch_size=settings.embed_batch_size,
                       view_id=view.view_id, windows=view.windows)
        for view in views
    ])
    stop = threading.Event()
    return ThreadPart("vector backfill",
                      lambda: backfills.run_forever(stop, settings.embed_idle_seconds), stop.set)


def _cached(view: DenseView) -> CachedEncoder:
    encoder = view.encoder
    if not isinstance(encoder, CachedEncoder):
        raise TypeError(f"view {view.view_id!r}: its encoder is not behind the passage cache")
    return encoder


# A document id no library holds: its lookup is the search server's readiness probe.
READINESS_PROBE_ID = "policy-indexer-readiness-probe"


class SearchAndMcp:
    """One ASGI app: MCP under ``/mcp`` (it owns the lifespan: its session manager), the rest
    (``POST /search``, the probes, ``/metrics`` with its token) to the search app."""

    def __init__(self, search: ASGIApp, mcp: ASGIApp, mcp_path: str) -> None:
        self.search, self.mcp, self.mcp_path = search, mcp, mcp_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or str(scope.get("path", "")).startswith(self.mcp_path):
            await self.mcp(scope, receive, send)
        else:
            await self.search(scope, receive, send)


def search_app(settings: Settings, service: Searcher, registry: CollectorRegistry,
               store: Store | None = None, *,
               checker: CitationChecker | None = None) -> SearchAndMcp:
    """``POST /search`` (and ``POST /citations/check`` and the MCP tool
    ``check_citations`` with a ``checker``), the probes, the MCP endpoint at ``/mcp`` and,
    only with
    ``search_metrics_token`` set, ``/metrics`` for a bearer of that token (else 404 there:
    the metrics are on the process's loopback metrics server).

    ``/readyz`` reads one state from ``store`` (a cheap request through the
    store's own error translation): 503 with the store's one-line reason while
    the index cannot be read. One ``no_access`` gate serves both interfaces, so a key
    has one budget (``retrieval.no_access``).
    """
    from retrieval.mcp_server import MCP_PATH, streamable_http_app  # noqa: PLC0415

    def not_ready() -> str | None:
        if store is None:
            return None
        try:
            store.get_state(READINESS_PROBE_ID)
        except StoreError as exc:
            return str(exc).splitlines()[0]
        return None

    keys = credentials(settings)
    metrics = SearchMetrics.create(registry,
                                   document_ids=settings.search_metrics_document_ids)
    citation_metrics = CitationMetrics.create(registry) if checker is not None else None
    gate = NoAccessGate()
    token = settings.search_metrics_token
    search = create_search_app(
        service, keys, registry, metrics=metrics, not_ready=not_ready, gate=gate,
        metrics_token=token.get_secret_value() if token is not None else None,
        checker=checker, citation_metrics=citation_metrics)
    mcp = streamable_http_app(service, keys, metrics=metrics, host=settings.search_host,
                              gate=gate, checker=checker, citation_metrics=citation_metrics)
    return SearchAndMcp(search, mcp, MCP_PATH)


@contextmanager
def searching(settings: Settings, registry: CollectorRegistry | None = None, *,
              freshness: bool = True, rerank: bool = True, runs: bool = True,
              ) -> Iterator[tuple[Backends, SearchParts]]:
    """The mode's backends and the search service over them, closed on exit."""
    backends = open_backends(settings)
    with Supervisor() as parts:
        parts.add_stop("backends", backends.close)
        search = search_service(settings, backends, registry, freshness=freshness,
                                rerank=rerank, runs=runs)
        parts.add_stop("search", search.close)
        yield backends, search


def search_once(settings: Settings, request: SearchRequest,
                labels: frozenset[str]) -> SearchResponse:
    """One search on the mode's index (``policy-indexer search``).

    Told ``no_access`` without a limit: the person at the machine can read the index
    files anyway, and chose the labels. The run is recorded under the command line's own
    caller id (``@cli``), which ``check-citations`` uses too."""
    with searching(settings) as (_backends, search):
        searcher = search.recording()
        if isinstance(searcher, TellsNoAccess):
            return searcher.search_telling_no_access(request, labels, lambda: True)
        return searcher.search(request, labels)


def check_once(settings: Settings, request: CheckRequest,
               labels: frozenset[str]) -> CheckResponse:
    """``policy-indexer check-citations``: the citations of a reply, as the command line's
    caller (``@cli``: its own runs only) with ``labels``. ``UnknownRun`` for a run id it
    has no run of."""
    with searching(settings, freshness=False, rerank=False) as (_backends, search):
        if search.checker is None:
            raise SearchNotConfigured("no search run log: citations cannot be checked")
        return search.checker.check(request, Caller(LOCAL_KEY_ID, labels))


NOTHING_TO_EMBED = ("POLICY_INDEXER_SEARCH_ENCODER=none (or POLICY_INDEXER_ENCODERS empty): "
                    "nothing to embed")


class SearchProcess:
    """The one search service of a process and the parts over it, each a part kind
    (``runtime.runner``): ``service`` first (its stop closes the service), then any of
    ``refresher`` (passage freshness), ``backfill`` (the vector backfill), ``server``
    (``POST /search`` and ``/mcp``). The flags are ``search_service``'s."""

    def __init__(self, *, freshness: bool = True, rerank: bool = True,
                 runs: bool = True) -> None:
        self._flags = {"freshness": freshness, "rerank": rerank, "runs": runs}
        self._search: SearchParts | None = None

    @property
    def search(self) -> SearchParts:
        if self._search is None:
            raise RuntimeError("SearchProcess.service must come before the parts that use it")
        return self._search

    def service(self, settings: Settings, backends: Backends,
                registry: CollectorRegistry) -> CallbackPart:
        self._search = search_service(settings, backends, registry, **self._flags)
        return CallbackPart("search", self._search.close)

    def refresher(self, settings: Settings, _backends: Backends,
                  _registry: CollectorRegistry) -> ThreadPart | None:
        return self.search.freshness_part(settings)

    def backfill(self, settings: Settings, backends: Backends,
                 _registry: CollectorRegistry) -> ThreadPart:
        """Raises ``SearchNotConfigured`` when there is no dense view."""
        if not self.search.views:
            raise SearchNotConfigured(NOTHING_TO_EMBED)
        return backfill_part(settings, backends, self.search.views)

    def server(self, settings: Settings, backends: Backends,
               registry: CollectorRegistry) -> UvicornThread:
        """Raises ``SearchNotConfigured`` without API keys, ``PartError`` when the port is
        taken."""
        search = self.search
        app = search_app(settings, search.recording(registry), registry, backends.store,
                         checker=search.checker)
        return UvicornThread("search server", app, settings.search_host, settings.search_port,
                             "POLICY_INDEXER_SEARCH_PORT", limits=settings.http_limits())


def _metrics_port(settings: Settings) -> ProbeServer:
    return ProbeServer(settings.metrics_port, "POLICY_INDEXER_METRICS_PORT")


def serve_search(settings: Settings) -> None:
    """``policy-indexer serve``: POST /search and MCP over streamable HTTP, until SIGTERM.

    ``/metrics`` on the search port needs its token; the probe server's is on
    ``metrics_host``."""
    search = SearchProcess()

    def started(running: Running) -> None:
        server = running.part("search server")
        assert isinstance(server, UvicornThread) and running.server is not None
        log.info("search server started", url=server.url,
                 metrics_url=f"{running.server.url}/metrics", mode=running.backends.mode,
                 encoder=settings.search_encoder)

    run_parts(settings, [search.service, search.server, search.refresher],
              registry=process_registry(), probes=_metrics_port(settings), on_started=started)


def serve_mcp_stdio(settings: Settings) -> None:
    """``policy-indexer mcp``: the MCP tool on stdin/stdout, labels of ``mcp_api_key``."""
    from retrieval.mcp_server import labels_for_key, run_stdio  # noqa: PLC0415

    if settings.mcp_api_key is None:
        raise SearchNotConfigured(
            "no POLICY_INDEXER_MCP_API_KEY: the stdio server's caller gets the labels of that "
            "key (one of POLICY_INDEXER_SEARCH_API_KEYS)")
    keys = credentials(settings)
    try:
        labels = labels_for_key(keys, settings.mcp_api_key.get_secret_value())
    except LookupError as exc:
        raise SearchNotConfigured(f"POLICY_INDEXER_MCP_API_KEY: {exc}") from exc
    key_id = keys.resolve(settings.mcp_api_key.get_secret_value()).key_id
    with searching(settings) as (_backends, search):
        run_stdio(search.recording(), labels, key_id=key_id, checker=search.checker)


def embed(settings: Settings, *, once: bool) -> int:
    """``policy-indexer embed``: encode what lacks a vector (``once``: with a progress bar,
    then exit: a model change's re-embedding job), or keep doing it as a process."""
    # no passage is returned here: listing the source for freshness (or loading the
    # reranker) would be wasted
    flags = {"freshness": False, "rerank": False, "runs": False}
    if not once:
        search = SearchProcess(**flags)

        def started(running: Running) -> None:
            assert running.server is not None
            log.info("vector backfill started", views=[v.view_id for v in search.search.views],
                     metrics_port=running.server.port)

        run_parts(settings, [search.service, search.backfill], registry=process_registry(),
                  probes=_metrics_port(settings), on_started=started)
        return 0
    from embeddings.backfill import reembed  # noqa: PLC0415

    with searching(settings, process_registry(), **flags) as (backends, parts):
        if not parts.views:
            raise SearchNotConfigured(NOTHING_TO_EMBED)
        return sum(reembed(backends.search_index(), _cached(view), progress=True,
                           batch_size=settings.embed_batch_size, view_id=view.view_id,
                           windows=view.windows)
                   for view in parts.views)


def evaluate_file(settings: Settings, qa_path: Path,
                  profiles: dict[str, frozenset[str]]) -> EvalReport:
    """``policy-indexer eval``: the question set against the mode's index.

    Unnecessary refusals are measured by asking again with the threshold off.
    """
    from retrieval.eval import evaluate, load_rows  # noqa: PLC0415
    from retrieval.rerank import WithThreshold  # noqa: PLC0415

    rows = load_rows(qa_path)
    with searching(settings, runs=False) as (_backends, search):
        service = search.service
        reranker = service.reranker
        unthresholded = SearchService(
            service.index, None, views=service.views, threshold=-1e9, keyword_threshold=-1e9,
            reranker=WithThreshold(reranker, -1e9) if reranker is not None else None,
            reranker_candidates=service.reranker_candidates)
        return evaluate(service, rows, profiles, unthresholded=unthresholded)
