"""``policy-indexer run`` in the embedded mode: the whole pipeline in one process.

In threads of one process, all on the SQLite files under ``embedded_dir``:

- the queue worker (local queue -> chunker -> SQLite index, the delete step);
- the folder watcher, when the source is a folder (``POLICY_INDEXER_SOURCE_KIND=folder``,
  ``POLICY_INDEXER_SOURCE_PATH=DIR``): every change of the folder becomes a
  change event in the queue, and changes made while stopped are sent at start;
- the webhook receiver, when ``POLICY_INDEXER_WEBHOOK_SECRETS`` is set (it
  refuses unsigned requests, so without a secret it is not started);
- the freshness monitor and the scheduler (nightly reconcile, hourly sweep,
  SQLite lease), when a source is configured (they compare the index with it);
- one ``/metrics`` (every part's metrics, one registry) and ``/healthz`` on
  ``metrics_host:metrics_port``.

It prints the mode and where everything listens or lives, logs the progress
of the first full indexing, and runs until SIGTERM or SIGINT. Then it stops
the producers first (scheduler, monitor, watcher, webhook), then the worker,
which commits what it has done; each part gets a bounded wait. Exit status
0 after a signal; 1 (a ``ClickException``) when a part cannot start or dies.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from contextlib import ExitStack
from types import FrameType

import click
import pydantic
import structlog
from prometheus_client import CollectorRegistry

from consumers.health import HealthServer
from consumers.retry import HealthState
from metrics.definitions import WorkerMetrics
from policy_indexer import __version__
from policy_indexer.embedded import Embedded, WorkerThread, index_path, queue_path
from policy_indexer.embedded_parts import MonitorThread, PartError, Scheduler, WebhookThread
from policy_indexer.first_indexing import FirstIndexing
from policy_indexer.folder_watch import start_folder_watcher, watched_folder
from policy_indexer.settings import Settings
from reindex.errors import LeaseError
from sources.errors import SourceError
from sources.watch import WatcherThread
from store.errors import StoreError
from transport.local_queue import ConsumerBusy, QueueError

log = structlog.get_logger(__name__)

WORKER_STOP_TIMEOUT_S = 30.0
NO_SOURCE = ("off (no source: set POLICY_INDEXER_SOURCE_KIND=folder and "
             "POLICY_INDEXER_SOURCE_PATH=DIR)")


def run_embedded(
    settings: Settings, *, checkpoint: Callable[[str], None] = lambda _step: None
) -> None:
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("stop requested", signal=signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        _run(settings, stop, checkpoint)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(settings: Settings, stop: threading.Event, checkpoint: Callable[[str], None]) -> None:
    try:
        embedded = Embedded.open(settings)
    except (StoreError, QueueError) as exc:
        raise click.ClickException(f"cannot open the embedded mode: {exc}") from exc
    with ExitStack() as parts:  # stopped in reverse order of start
        parts.callback(embedded.close)
        try:
            worker, lines = _start(settings, embedded, parts, checkpoint)
        except (PartError, SourceError, StoreError, QueueError, LeaseError, ValueError) as exc:
            raise click.ClickException(f"policy-indexer run cannot start: {_reason(exc)}") from exc
        click.echo("\n".join(lines))
        while not stop.wait(0.5):
            if not worker.is_alive():
                why = repr(worker.error) if worker.error else "it stopped"
                raise click.ClickException(f"the queue worker ended: {why}")
        log.info("stopping")
    log.info("stopped")


def _reason(exc: Exception) -> str:
    """The message alone for a settings error (pydantic's has its input dump and a URL)."""
    if isinstance(exc, pydantic.ValidationError):
        return "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
    return str(exc)


def _start(
    settings: Settings,
    embedded: Embedded,
    parts: ExitStack,
    checkpoint: Callable[[str], None],
) -> tuple[WorkerThread, list[str]]:
    """Start every part, registering its stop in ``parts``; returns the banner lines."""
    registry = CollectorRegistry()
    health = HealthState()
    try:
        worker = WorkerThread(embedded.worker(
            WorkerMetrics.create(registry), health=health, checkpoint=checkpoint))
    except ConsumerBusy as exc:
        raise PartError(f"another policy-indexer already runs here: {exc}") from exc
    try:
        server = HealthServer(settings.metrics_host, settings.metrics_port, registry, health)
    except OSError as exc:
        raise PartError(f"/metrics cannot listen on {settings.metrics_host}:"
                        f"{settings.metrics_port} (POLICY_INDEXER_METRICS_PORT): {exc}") from exc
    parts.callback(server.stop)
    server.start()
    parts.callback(worker.stop, WORKER_STOP_TIMEOUT_S)
    worker.start()
    lines = [
        f"policy-indexer {__version__}: embedded mode (one process, no servers)",
        f"  index:     {index_path(settings)} (SQLite, FTS5)",
        f"  queue:     {queue_path(settings)} (topic {embedded.topic!r})",
        f"  metrics:   http://{settings.metrics_host}:{server.port}/metrics  health: /healthz",
    ]
    lines.append(f"  webhook:   {_start_webhook(settings, embedded, registry, parts)}")
    watcher = _start_watcher(settings, embedded, parts)
    folder = watched_folder(settings)
    lines.append(f"  watching:  {folder} (state {settings.embedded_dir})" if watcher
                 else f"  watching:  {NO_SOURCE}")
    progress = FirstIndexing(embedded, watcher, click.echo).start()
    parts.callback(progress.stop)
    if settings.source_kind is None:
        lines += [f"  monitor:   {NO_SOURCE}", f"  scheduler: {NO_SOURCE}"]
    else:
        monitor = MonitorThread(settings, registry).start()
        parts.callback(monitor.stop)
        lines.append(f"  monitor:   {settings.source_kind} source, every {monitor.interval_s:g} s")
        sched = Scheduler.start(settings, registry)
        parts.callback(sched.stop)
        lines.append(f"  scheduler: reconcile {settings.reindex_cron!r} "
                     f"({settings.reindex_timezone}, next {sched.next_reconcile()}), "
                     f"sweep every {settings.sweep_interval_seconds:g} s")
    lines.append("  see it:    policy-indexer status (same POLICY_INDEXER_* settings)   "
                 "stop: Ctrl-C or SIGTERM")
    return worker, lines


def _start_webhook(settings: Settings, embedded: Embedded, registry: CollectorRegistry,
                   parts: ExitStack) -> str:
    if not settings.webhook_secrets:
        return "off (no POLICY_INDEXER_WEBHOOK_SECRETS: it only accepts signed requests)"
    try:
        receiver = WebhookThread(settings, embedded.publisher(), registry)
    except click.ClickException as exc:  # a secret too short
        raise PartError(exc.message) from exc
    receiver.start()
    parts.callback(receiver.stop)
    return f"{receiver.url}/webhooks/cms (signed, into the local queue)"


def _start_watcher(settings: Settings, embedded: Embedded,
                   parts: ExitStack) -> WatcherThread | None:
    try:
        watcher = start_folder_watcher(settings, embedded)
    except SourceError as exc:
        raise PartError(f"{exc} (POLICY_INDEXER_SOURCE_PATH={settings.source_path!r})") from exc
    if watcher is not None:
        parts.callback(watcher.stop)
    return watcher
