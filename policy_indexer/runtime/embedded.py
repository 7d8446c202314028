"""``policy-indexer run`` in the embedded mode: the whole pipeline in one process.

The runner (``runtime.runner.run_parts``) over all of its parts, each the part
kind its standalone command runs alone (``webhook_part``, ``SearchProcess``,
``monitor_part``, ``scheduler_part``), all on the SQLite files under
``embedded_dir``:

- the queue worker (local queue -> chunker -> SQLite index, the delete step);
- ``/metrics`` (every part's metrics, one registry) and ``/healthz`` on
  ``metrics_host:metrics_port``;
- the webhook receiver, when ``POLICY_INDEXER_WEBHOOK_SECRETS`` is set (it
  refuses unsigned requests, so without a secret it is not started);
- the folder watcher, when the source is a folder (``POLICY_INDEXER_SOURCE_KIND=folder``,
  ``POLICY_INDEXER_SOURCE_PATH=DIR``): every change of the folder becomes a
  change event in the queue, and changes made while stopped are sent at start;
- the search service: the vector backfill (unless the encoder is off) and, with
  API keys, ``POST /search`` and ``/mcp``;
- the freshness monitor and the scheduler (nightly reconcile, hourly sweep,
  SQLite lease), when a source is configured (they compare the index with it).

It prints the mode and where everything listens or lives, logs the progress
of the first full indexing, and runs until SIGTERM or SIGINT. Then the
supervisor stops the producers first (scheduler, monitor, watcher, webhook),
then the worker, which commits what it has done. Raises ``RunError`` when a
part cannot start or dies.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic
import structlog
from prometheus_client import CollectorRegistry

from consumers.retry import HealthState
from embeddings.errors import EmbeddingError
from foundation.validation import one_line
from metrics.definitions import WorkerMetrics
from policy_indexer import __version__
from policy_indexer.runtime import faults
from policy_indexer.runtime.backends import Backends, EmbeddedBackends, index_path, queue_path
from policy_indexer.runtime.first_indexing import FirstIndexing
from policy_indexer.runtime.http import (
    Health,
    process_registry,
    worker_health,
    worker_heartbeat,
)
from policy_indexer.runtime.monitor import MonitorPart, monitor_part
from policy_indexer.runtime.parts import CallbackPart, PartDied, PartError, ThreadPart
from policy_indexer.runtime.reconcile import SchedulerPart, scheduler_part
from policy_indexer.runtime.runner import PartKind, ProbeServer, Running, run_parts
from policy_indexer.runtime.search import SearchProcess
from policy_indexer.runtime.servers import UvicornThread
from policy_indexer.runtime.sources import git_poller_part
from policy_indexer.runtime.webhook import webhook_enabled, webhook_part, webhook_routes
from policy_indexer.settings import Settings
from reindex.errors import LeaseError
from sources.errors import SourceError
from store.errors import StoreError
from transport.local_queue import ConsumerBusy, QueueError
from watcher.watch import STATE_FILE, WatcherThread, start_watcher_thread

log = structlog.get_logger(__name__)

WORKER_STOP_TIMEOUT_S = 30.0
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
    try:
        run = EmbeddedRun(settings, backends, echo)
        run_parts(settings, run.kinds(), registry=process_registry(), probes=run.probes(),
                  backends=backends, on_started=run.started)
    except PartDied as exc:
        raise RunError(str(exc)) from exc
    except (PartError, SourceError, StoreError, QueueError, LeaseError, EmbeddingError,
            ValueError) as exc:
        raise RunError(f"policy-indexer run cannot start: {_reason(exc)}") from exc
    finally:
        backends.close()
    log.info("stopped")


def _reason(exc: Exception) -> str:
    """The message alone for a settings error (pydantic's has its input dump and a URL)."""
    if isinstance(exc, pydantic.ValidationError):
        return one_line(exc, locations=False)
    return str(exc)


class EmbeddedRun:
    """The embedded run's parts, each the part kind the standalone command runs alone, and
    what only this process has: the worker's health on the probes (with the folder
    watcher's), the first indexing's progress (the monitor's first cycle waits for it)
    and the banner."""

    def __init__(self, settings: Settings, backends: EmbeddedBackends,
                 echo: Callable[[str], None]) -> None:
        self.settings = settings
        self.backends = backends
        self.echo = echo
        self.health = HealthState()
        self.watched: list[WatcherThread] = []  # once started: /healthz says its state
        self.search = SearchProcess()
        self.progress: FirstIndexing | None = None

    def probes(self) -> ProbeServer:
        return ProbeServer(self.settings.metrics_port, "POLICY_INDEXER_METRICS_PORT",
                           with_watcher(worker_health(self.health), self.watched),
                           worker_heartbeat(self.health))

    def kinds(self) -> list[PartKind]:
        """In the order they start; they stop in reverse (producers before the worker)."""
        s = self.settings
        kinds: list[PartKind] = [self.worker]
        if webhook_enabled(s):
            kinds.append(webhook_part)
        kinds += [git_poller, self.folder_watcher, self.first_indexing, self.search.service,
                  self.search.refresher, self.backfill]
        if s.search_api_keys is not None or s.search_api_keys_file is not None:
            kinds.append(self.search.server)
        if s.source_kind is not None:
            kinds += [self.monitor, scheduler_part]
        return kinds

    def backfill(self, settings: Settings, backends: Backends,
                 registry: CollectorRegistry) -> ThreadPart | None:
        """The vector backfill, unless the encoder is off (keyword search only)."""
        if not self.search.search.views:
            return None
        return self.search.backfill(settings, backends, registry)

    def worker(self, _settings: Settings, _backends: Backends,
               registry: CollectorRegistry) -> ThreadPart:
        try:
            worker = self.backends.worker(WorkerMetrics.create(registry), health=self.health,
                                          checkpoint=faults.checkpoint())
        except ConsumerBusy as exc:
            raise PartError(f"another policy-indexer already runs here: {exc}") from exc
        return ThreadPart("queue worker", worker.run, worker.request_stop,
                          stop_timeout_s=WORKER_STOP_TIMEOUT_S)

    def folder_watcher(self, settings: Settings, backends: Backends,
                       registry: CollectorRegistry) -> WatcherPart | None:
        part = folder_watcher_part(settings, backends, registry)
        if part is not None:
            self.watched.append(part.watcher)
        return part

    def first_indexing(self, _settings: Settings, _backends: Backends,
                       _registry: CollectorRegistry) -> ThreadPart:
        self.progress = FirstIndexing(self.backends, self.watched[0] if self.watched else None,
                                      self.echo)
        return ThreadPart("first-indexing progress", self.progress.run,
                          self.progress.request_stop, required=False)

    def monitor(self, settings: Settings, backends: Backends,
                registry: CollectorRegistry) -> MonitorPart:
        assert self.progress is not None
        return monitor_part(settings, backends, registry, first_indexed=self.progress.finished)

    def started(self, running: Running) -> None:
        self.echo("\n".join(self.banner(running)))

    def banner(self, running: Running) -> list[str]:
        s = self.settings
        assert running.server is not None
        lines = [
            f"policy-indexer {__version__}: embedded mode (one process, no servers)",
            f"  index:     {index_path(s)} (SQLite, FTS5)",
            f"  queue:     {queue_path(s)} (topic {self.backends.topic!r})",
            f"  metrics:   {running.server.url}/metrics  health: /healthz",
        ]
        receiver = running.part("webhook receiver")
        if isinstance(receiver, UvicornThread):
            routes = ", ".join(receiver.url + route for route in webhook_routes(s))
            lines.append(f"  webhook:   {routes} (signed, into the local queue)")
        else:
            lines.append("  webhook:   off (no POLICY_INDEXER_WEBHOOK_SECRETS: it only "
                         "accepts signed requests)")
        if running.part("git poller") is not None:
            lines.append(f"  git poll:  {s.source_url} every {s.git_poll_interval_seconds:g} s")
        if self.watched:
            lines.append(f"  watching:  {self.watched[0].folder} (state {s.embedded_dir})")
        else:
            lines.append(f"  watching:  {NO_SOURCE}")
        views = self.search.search.views
        if not views:
            vectors = "off (POLICY_INDEXER_SEARCH_ENCODER=none: keyword search only)"
        else:
            vectors = (f"{', '.join(v.view_id for v in views)}, following the index "
                       "(keyword search at once)")
        server = running.part("search server")
        if isinstance(server, UvicornThread):
            served = f"{server.url}/search and {server.url}/mcp (API keys)"
        else:
            served = "off (no POLICY_INDEXER_SEARCH_API_KEYS: `policy-indexer search` works)"
        lines += [f"  vectors:   {vectors}", f"  search:    {served}"]
        scheduler = running.part("scheduler")
        if isinstance(scheduler, SchedulerPart):
            lines.append(f"  monitor:   {s.source_kind} source, every "
                         f"{s.monitor_interval_seconds:g} s")
            lines.append(f"  scheduler: {scheduler.describe()}")
        else:
            lines += [f"  monitor:   {NO_SOURCE}", f"  scheduler: {NO_SOURCE}"]
        lines.append("  see it:    policy-indexer status (same POLICY_INDEXER_* settings)   "
                     "stop: Ctrl-C or SIGTERM")
        return lines


def git_poller(settings: Settings, backends: Backends,
               _registry: CollectorRegistry) -> ThreadPart | None:
    """The Git source's polling mode, publishing into the mode's queue (None: not polling)."""
    return git_poller_part(settings, backends.publisher())


def watched_folder(settings: Settings) -> Path | None:
    """The folder to watch: ``source_path`` when ``source_kind`` is ``folder``, else None."""
    if settings.source_kind == "folder" and settings.source_path:
        return Path(settings.source_path)
    return None


def start_folder_watcher(settings: Settings, backends: Backends) -> WatcherThread | None:
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


class WatcherPart(CallbackPart):
    """The watcher runs its own thread; the part is its stop and its liveness."""

    def __init__(self, watcher: WatcherThread) -> None:
        super().__init__("folder watcher", watcher.stop, watcher.is_alive,
                         lambda: watcher.error)
        self.watcher = watcher


def folder_watcher_part(settings: Settings, backends: Backends,
                        _registry: CollectorRegistry) -> WatcherPart | None:
    """The folder watcher as a part (None without a folder source); ``PartError`` naming
    the setting when the folder cannot be watched."""
    try:
        watcher = start_folder_watcher(settings, backends)
    except SourceError as exc:
        raise PartError(f"{exc} (POLICY_INDEXER_SOURCE_PATH={settings.source_path!r})") from exc
    return WatcherPart(watcher) if watcher is not None else None
