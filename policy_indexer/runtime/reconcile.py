"""The reindex jobs as commands run them: one reconcile, one sweep, the scheduler process.

All three work on the mode's own index, run log and lease (``backends``), so
``policy-indexer sweep`` sweeps the embedded SQLite index in the embedded mode
and Elasticsearch in Kafka mode, as the runbook says.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog

from deleter.sweep import SweepReport
from deleter.sweep import sweep as run_sweep
from metrics.definitions import ReindexMetrics
from policy_indexer.runtime import faults
from policy_indexer.runtime.backends import Backends, open_backends
from policy_indexer.runtime.http import MetricsServer, process_registry
from policy_indexer.runtime.jobs import job_runner, scheduler_for
from policy_indexer.runtime.parts import Supervisor, stop_on_signals
from policy_indexer.runtime.sources import open_configured_source
from policy_indexer.runtime.startup import StartupStatus, until_ready
from policy_indexer.settings import Settings
from reindex.jobs import JobRunner
from reindex.model import ReconcileReport

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ReconcileOutcome:
    report: ReconcileReport | None  # None: not run, the lease is held elsewhere
    lease_skip: str | None


def reconcile_once(
    settings: Settings,
    *,
    dry_run: bool,
    allow_mass_delete: bool,
    on_stop_signal: Callable[[str], None] = lambda _why: None,
) -> ReconcileOutcome:
    """One reconcile, by hand; SIGTERM/SIGINT stop it between two documents.

    Raises ``SourceNotConfiguredError`` / ``ValueError`` (the source settings),
    ``StoreError`` / ``LeaseError`` (the index, the run log or the lease).
    """
    source = open_configured_source(settings)
    backends = open_backends(settings)
    with Supervisor() as parts:
        parts.add_stop("backends", backends.close)
        parts.add_stop("source", source.close)
        runner = job_runner(backends, source, trigger="manual")
        parts.add_stop("job runner", runner.close)

        def on_signal(why: str) -> None:
            on_stop_signal(why)
            runner.stop_event.set()

        with stop_on_signals(on_signal):
            report = runner.reconcile(
                dry_run=dry_run,
                allow_mass_delete=allow_mass_delete,
                checkpoint=faults.checkpoint(),
            )
        return ReconcileOutcome(report, runner.last_skip)


def sweep_once(settings: Settings, *, grace_s: float | None, dry_run: bool) -> SweepReport:
    """Find (and unless ``dry_run`` delete) leftover versions in the mode's index."""
    grace = settings.sweep_grace_seconds if grace_s is None else grace_s
    backends = open_backends(settings)
    try:
        report = run_sweep(backends.store, grace=timedelta(seconds=grace), dry_run=dry_run)
    finally:
        backends.close()
    log.info("sweep finished", index=backends.where(), dry_run=dry_run,
             examined=report.examined, leftovers=dict(report.leftovers),
             deleted=report.deleted, kept_in_grace=report.kept_in_grace)
    return report


def run_scheduler(settings: Settings, *, port: int | None,
                  echo: Callable[[str], None]) -> None:
    """The nightly reconcile and the hourly sweep, with /metrics, until SIGTERM/SIGINT.

    Then a running reconcile stops between two documents (recorded as failed,
    "interrupted"; the next run finishes it), the scheduler waits for the running
    job to return and gives its lease back.
    """
    source = open_configured_source(settings)
    registry = process_registry()
    metrics = ReindexMetrics.create(registry)
    status = StartupStatus()
    stopping = threading.Event()
    runner: JobRunner | None = None

    def on_signal(why: str) -> None:
        log.info("stop requested", signal=why)
        stopping.set()
        if runner is not None:
            runner.stop_event.set()

    def open_ready() -> tuple[Backends, JobRunner, datetime | None]:
        with ExitStack() as undo:  # closes what was opened if a step fails
            backends = open_backends(settings)
            undo.callback(backends.close)
            ready = job_runner(backends, source, trigger="scheduled", metrics=metrics)
            undo.callback(ready.close)
            ready.refresh_metrics()
            last_attempt = ready.last_attempt()
            undo.pop_all()
            return backends, ready, last_attempt

    with Supervisor() as parts, stop_on_signals(on_signal):
        parts.add_stop("source", source.close)
        # /healthz and /readyz answer from the first moment: while the run log's
        # store cannot be reached the scheduler is alive, not ready, and retries.
        server = MetricsServer(settings.metrics_host,
                               settings.scheduler_metrics_port if port is None else port,
                               registry, status.health, policy=settings.probe_policy())
        parts.start(server)
        opened = until_ready(open_ready, what="the run log's store", state=status,
                             stop=stopping, policy=settings.retry_policy())
        if opened is None:
            return
        backends, runner, last_attempt = opened
        parts.add_stop("backends", backends.close)
        parts.add_stop("job runner", runner.close)
        if stopping.is_set():
            return
        sched = scheduler_for(settings, runner, last_attempt)
        sched.start()
        parts.add_stop("scheduler", lambda: sched.shutdown(wait=True))
        status.starting = False
        job = sched.get_job("reconcile")
        log.info("scheduler started", holder=runner.holder, metrics_port=server.port,
                 next_reconcile=str(job.next_run_time) if job else None,
                 cron=settings.reindex_cron, timezone=settings.reindex_timezone)
        echo(f"scheduler {runner.holder}: next reconcile "
             f"{job.next_run_time if job else '?'}; /metrics on port {server.port}")
        while not stopping.wait(1.0):
            pass
    log.info("scheduler stopped")
