"""``policy-indexer run`` in the embedded mode: the whole pipeline in one process.

Parts, each a ``Part`` under one ``Supervisor``, all on the SQLite files under
``embedded_dir``:

- the queue worker (local queue -> chunker -> SQLite index, the delete step);
- ``/metrics`` (every part's metrics, one registry) and ``/healthz`` on
  ``metrics_host:metrics_port``;
- the webhook receiver, when ``POLICY_INDEXER_WEBHOOK_SECRETS`` is set (it
  refuses unsigned requests, so without a secret it is not started);
- the folder watcher, when the source is a folder (``POLICY_INDEXER_SOURCE_KIND=folder``,
  ``POLICY_INDEXER_SOURCE_PATH=DIR``): every change of the folder becomes a
  change event in the queue, and changes made while stopped are sent at start;
- the freshness monitor and the scheduler (nightly reconcile, hourly sweep,
  SQLite lease), when a source is configured (they compare the index with it).

It prints the mode and where everything listens or lives, logs the progress
of the first full indexing, and runs until SIGTERM or SIGINT. Then the
supervisor stops the producers first (scheduler, monitor, watcher, webhook),
then the worker, which commits what it has done. Raises ``RunError`` when a
part cannot start or dies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic
import structlog
from prometheus_client import CollectorRegistry

from consumers.retry import HealthState
from embeddings.errors import EmbeddingError
from foundation.validation import one_line
from metrics.definitions import ReindexMetrics, WorkerMetrics
from policy_indexer import __version__
from policy_indexer.runtime import faults
from policy_indexer.runtime.backends import EmbeddedBackends, index_path, queue_path
from policy_indexer.runtime.dead_letters import refusals
from policy_indexer.runtime.first_indexing import FirstIndexing
from policy_indexer.runtime.http import (
    Health,
    MetricsServer,
    process_registry,
    worker_health,
    worker_heartbeat,
)
from policy_indexer.runtime.jobs import (
    freshness_monitor,
    job_runner,
    register_freshness,
    scheduler_for,
)
from policy_indexer.runtime.parts import (
    CallbackPart,
    PartDied,
    PartError,
    Supervisor,
    ThreadPart,
    stop_on_signals,
)
from policy_indexer.runtime.search import backfill_part, search_app, search_service
from policy_indexer.runtime.servers import UvicornThread
from policy_indexer.runtime.sources import git_poller_part, open_configured_source
from policy_indexer.runtime.webhook import webhook_app, webhook_enabled, webhook_routes
from policy_indexer.settings import Settings
from reindex.errors import LeaseError
from sources.errors import SourceError
from store.errors import StoreError
from store.sqlite import SQLiteStore
from transport.local_queue import ConsumerBusy, LocalQueue, QueueError
from watcher.watch import STATE_FILE, WatcherThread, start_watcher_thread

log = structlog.get_logger(__name__)

WORKER_STOP_TIMEOUT_S = 30.0
PART_STOP_TIMEOUT_S = 10.0
NO_SOURCE = ("off (no source: set POLICY_INDEXER_SOURCE_KIND=folder and "
             "POLICY_INDEXER_SOURCE_PATH=DIR)")


class RunError(Exception):
    """The embedded run could not start, or a part of it died; the message says which."""


def run_embedded(settings: Settings, echo: Callable[[str], None]) -> None:
    """Run until SIGTERM/SIGINT; ``echo`` prints the banner and the first-indexing line."""
    try:
        backends = EmbeddedBackends.open(settings)
    except (StoreError, QueueError) as exc:
        raise RunError(f"cannot open the embedded mode: {exc}") from exc
    # stopped in reverse order of start; a SIGTERM while the parts start (the
    # probes already answer) stops them too, instead of killing the process
    with Supervisor() as parts, stop_on_signals(parts.request_stop):
        parts.add_stop("embedded files", backends.close)
        try:
            lines = _start(settings, backends, parts, echo)
        except (PartError, SourceError, StoreError, QueueError, LeaseError, EmbeddingError,
                ValueError) as exc:
            raise RunError(f"policy-indexer run cannot start: {_reason(exc)}") from exc
        echo("\n".join(lines))
        try:
            parts.run_until_stopped()
        except PartDied as exc:
            raise RunError(str(exc)) from exc
    log.info("stopped")


def _reason(exc: Exception) -> str:
    """The message alone for a settings error (pydantic's has its input dump and a URL)."""
    if isinstance(exc, pydantic.ValidationError):
        return one_line(exc, locations=False)
    return str(exc)


def _start(settings: Settings, backends: EmbeddedBackends, parts: Supervisor,
           echo: Callable[[str], None]) -> list[str]:
    """Start every part under ``parts``; returns the banner lines."""
    registry = process_registry()
    health = HealthState()
    try:
        worker = backends.worker(WorkerMetrics.create(registry), health=health,
                                 checkpoint=faults.checkpoint())
    except ConsumerBusy as exc:
        raise PartError(f"another policy-indexer already runs here: {exc}") from exc
    watched: list[WatcherThread] = []  # the folder watcher, once started: /healthz says its state
    try:
        server = MetricsServer(settings.metrics_host, settings.metrics_port, registry,
                               with_watcher(worker_health(health), watched),
                               policy=settings.probe_policy(), heartbeat=worker_heartbeat(health))
    except OSError as exc:
        raise PartError(f"/metrics cannot listen on {settings.metrics_host}:"
                        f"{settings.metrics_port} (POLICY_INDEXER_METRICS_PORT): {exc}") from exc
    parts.start(server)
    parts.start(ThreadPart("queue worker", worker.run, worker.request_stop,
                           stop_timeout_s=WORKER_STOP_TIMEOUT_S))
    lines = [
        f"policy-indexer {__version__}: embedded mode (one process, no servers)",
        f"  index:     {index_path(settings)} (SQLite, FTS5)",
        f"  queue:     {queue_path(settings)} (topic {backends.topic!r})",
        f"  metrics:   {server.url}/metrics  health: /healthz",
    ]
    lines.append(f"  webhook:   {_start_webhook(settings, backends, registry, parts)}")
    poller = git_poller_part(settings, backends.publisher())  # the Git source's polling mode
    if poller is not None:
        parts.start(poller)
        every = settings.git_poll_interval_seconds
        lines.append(f"  git poll:  {settings.source_url} every {every:g} s")
    try:
        watcher = start_folder_watcher(settings, backends)
    except SourceError as exc:
        raise PartError(f"{exc} (POLICY_INDEXER_SOURCE_PATH={settings.source_path!r})") from exc
    if watcher is not None:
        parts.start(_watcher_part(watcher))
        watched.append(watcher)
        lines.append(f"  watching:  {watcher.folder} (state {settings.embedded_dir})")
    else:
        lines.append(f"  watching:  {NO_SOURCE}")
    progress = FirstIndexing(backends, watcher, echo)
    parts.start(ThreadPart("first-indexing progress", progress.run, progress.request_stop),
                required=False)
    lines += _start_search(settings, backends, registry, parts)
    if settings.source_kind is None:
        lines += [f"  monitor:   {NO_SOURCE}", f"  scheduler: {NO_SOURCE}"]
    else:
        lines.append(f"  monitor:   {_start_monitor(settings, registry, parts, progress.finished)}")
        lines.append(f"  scheduler: {_start_scheduler(settings, backends, registry, parts)}")
    lines.append("  see it:    policy-indexer status (same POLICY_INDEXER_* settings)   "
                 "stop: Ctrl-C or SIGTERM")
    return lines


def watched_folder(settings: Settings) -> Path | None:
    """The folder to watch: ``source_path`` when ``source_kind`` is ``folder``, else None."""
    if settings.source_kind == "folder" and settings.source_path:
        return Path(settings.source_path)
    return None


def start_folder_watcher(settings: Settings, backends: EmbeddedBackends) -> WatcherThread | None:
    """Watch the library folder in a thread, publishing to the local queue; None without one.

    Raises ``SourceUnavailableError`` when the folder is missing or its state file
    cannot be opened.
    """
    folder = watched_folder(settings)
    if folder is None:
        return None
    return start_watcher_thread(
        folder,
        backends.publisher(),
        state_path=settings.embedded_dir / STATE_FILE,
        index=backends.store,
        debounce_ms=settings.watch_debounce_ms,
        rescan_seconds=settings.watch_rescan_seconds,
        max_file_bytes=settings.folder_max_file_bytes,
        restart_initial_s=settings.watch_restart_initial_seconds,
        restart_max_s=settings.watch_restart_max_seconds,
        hidden_allow=settings.folder_hidden_allow,
        allow_hard_links=settings.folder_allow_hard_links,
        default_access_labels=settings.source_default_access_labels,
    )


WATCHER_DOWN = frozenset({"failed", "failing"})  # the watcher's states the process reports


def with_watcher(health: Health, watched: list[WatcherThread]) -> Health:
    """``health`` plus the folder watcher's: ``failed`` (liveness 503) while it restarts,
    ``failing`` (readiness 503) while its passes fail; ``degraded`` (some sub-folders
    cannot be listed, the rest is indexed) stays inside ``folder_watcher``: both 200."""

    def report() -> dict[str, Any]:
        body = health()
        for watcher in watched:
            state = watcher.health()
            body["folder_watcher"] = state
            if state["status"] in WATCHER_DOWN and body.get("status") == "ok":
                body["status"] = state["status"]
        return body

    return report


def _watcher_part(watcher: WatcherThread) -> CallbackPart:
    """The watcher runs its own thread; the part is its stop and its liveness."""
    return CallbackPart("folder watcher", watcher.stop, watcher.is_alive, lambda: watcher.error)


def _start_webhook(settings: Settings, backends: EmbeddedBackends, registry: CollectorRegistry,
                   parts: Supervisor) -> str:
    if not webhook_enabled(settings):
        return "off (no POLICY_INDEXER_WEBHOOK_SECRETS: it only accepts signed requests)"
    app = webhook_app(settings, backends.publisher(), registry, states=backends.store)
    receiver = UvicornThread("webhook receiver", app,
                             settings.webhook_host, settings.webhook_port,
                             "POLICY_INDEXER_WEBHOOK_PORT", limits=settings.http_limits())
    parts.start(receiver)
    routes = ", ".join(receiver.url + route for route in webhook_routes(settings))
    return f"{routes} (signed, into the local queue)"


def _start_search(settings: Settings, backends: EmbeddedBackends,
                  registry: CollectorRegistry, parts: Supervisor) -> list[str]:
    """The vector backfill (unless the encoder is off) and, with API keys, POST /search + /mcp."""
    search = search_service(settings, backends, registry)
    parts.add_stop("search", search.close)
    refresher = search.freshness_part(settings)
    if refresher is not None:
        parts.start(refresher)
    if not search.views:
        vectors = "off (POLICY_INDEXER_SEARCH_ENCODER=none: keyword search only)"
    else:
        parts.start(backfill_part(settings, backends, search.views))
        vectors = (f"{', '.join(v.view_id for v in search.views)}, following the index "
                   "(keyword search at once)")
    if settings.search_api_keys is None and settings.search_api_keys_file is None:
        served = "off (no POLICY_INDEXER_SEARCH_API_KEYS: `policy-indexer search` works)"
    else:
        app = search_app(settings, search.recording(registry), registry, backends.store,
                         checker=search.checker)
        server = UvicornThread("search server", app,
                               settings.search_host, settings.search_port,
                               "POLICY_INDEXER_SEARCH_PORT", limits=settings.http_limits())
        parts.start(server)
        served = f"{server.url}/search and {server.url}/mcp (API keys)"
    return [f"  vectors:   {vectors}", f"  search:    {served}"]


def _start_monitor(settings: Settings, registry: CollectorRegistry, parts: Supervisor,
                   first_indexed: threading.Event) -> str:
    """The monitor gets its own source object and its own connection to the index file.

    Its first cycle waits for the first indexing (``first_indexed``, at most
    ``monitor_first_cycle_wait_seconds``): before it, every document would read as
    missing with the age of its file as lag.
    """
    source = open_configured_source(settings)
    store = SQLiteStore(index_path(settings))
    letters = LocalQueue(queue_path(settings))  # its own connection, read only here

    def refused() -> set[tuple[str, int]]:
        return set(refusals(letters.dead_letters(settings.kafka_topic)))

    monitor = freshness_monitor(settings, source, store, refused)
    register_freshness(settings, monitor, registry)
    interval = settings.monitor_interval_seconds

    def close() -> None:
        source.close()
        store.close()
        letters.close()

    wait_s = settings.monitor_first_cycle_wait_seconds
    parts.start(ThreadPart("freshness monitor",
                           lambda: monitor.run_forever(interval, start_when=first_indexed,
                                                       start_within_s=wait_s),
                           monitor.stop, stop_timeout_s=PART_STOP_TIMEOUT_S, after_stop=close))
    return f"{settings.source_kind} source, every {interval:g} s"


def _start_scheduler(settings: Settings, backends: EmbeddedBackends,
                     registry: CollectorRegistry, parts: Supervisor) -> str:
    """The reconcile on ``reindex_cron`` and the sweep every ``sweep_interval_seconds``.

    Raises ``StoreError`` / ``LeaseError`` when the run log or the lease cannot open.
    """
    store = SQLiteStore(index_path(settings))
    source = open_configured_source(settings)

    def close() -> None:
        source.close()
        store.close()

    try:
        runner = job_runner(backends, source, trigger="scheduled",
                            metrics=ReindexMetrics.create(registry), store=store, on_close=close)
    except BaseException:
        close()
        raise
    try:
        runner.refresh_metrics()
        sched = scheduler_for(settings, runner, runner.last_attempt())
        sched.start()
    except BaseException:
        runner.close()
        raise

    def stop() -> None:
        """A running reconcile stops between two documents (recorded as interrupted)."""
        runner.stop_event.set()
        sched.shutdown(wait=True)
        runner.close()

    parts.add_stop("scheduler", stop)
    job = sched.get_job("reconcile")
    return (f"reconcile {settings.reindex_cron!r} ({settings.reindex_timezone}, next "
            f"{job.next_run_time if job is not None else '?'}), "
            f"sweep every {settings.sweep_interval_seconds:g} s")
