"""The reindex jobs as commands run them: one reconcile, one sweep, the scheduler process.

All three work on the mode's own index, run log and lease (``backends``), so
``policy-indexer sweep`` sweeps the embedded SQLite index in the embedded mode
and Elasticsearch in Kafka mode, as the runbook says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from prometheus_client import CollectorRegistry

from deleter.sweep import SweepReport
from deleter.sweep import sweep as run_sweep
from metrics.definitions import ReindexMetrics
from policy_indexer.runtime import faults
from policy_indexer.runtime.backends import Backends, open_backends
from policy_indexer.runtime.http import process_registry
from policy_indexer.runtime.jobs import job_runner, scheduler_for, source_and_index
from policy_indexer.runtime.parts import Supervisor, stop_on_signals
from policy_indexer.runtime.runner import ProbeServer, Readiness, Running, run_parts
from policy_indexer.runtime.sources import open_configured_source, source_config
from policy_indexer.runtime.startup import StartupStatus
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


class SchedulerPart:
    """The reconcile on ``reindex_cron`` and the sweep every ``sweep_interval_seconds``
    (APScheduler's own thread), as a part.

    Its stop: a running reconcile stops between two documents (recorded as failed,
    "interrupted"; the next run finishes it), the scheduler waits for the running
    job to return, and the runner gives its lease back and closes what it opened.
    """

    name = "scheduler"
    error = None
    required = False  # APScheduler's thread: its jobs' failures are logged and counted

    def __init__(self, settings: Settings, runner: JobRunner,
                 last_attempt: datetime | None) -> None:
        self.settings = settings
        self.runner = runner
        self.scheduler = scheduler_for(settings, runner, last_attempt)

    def start(self) -> None:
        self.scheduler.start()

    def alive(self) -> bool:
        return True

    def stop(self) -> None:
        self.runner.stop_event.set()
        try:
            if self.scheduler.running:
                self.scheduler.shutdown(wait=True)
        finally:
            self.runner.close()

    def next_reconcile(self) -> datetime | None:
        job = self.scheduler.get_job("reconcile")
        return job.next_run_time if job is not None else None

    def describe(self) -> str:
        s = self.settings
        nxt = self.next_reconcile()
        return (f"reconcile {s.reindex_cron!r} ({s.reindex_timezone}, next "
                f"{nxt if nxt is not None else '?'}), "
                f"sweep every {s.sweep_interval_seconds:g} s")


def scheduler_part(settings: Settings, backends: Backends,
                   registry: CollectorRegistry) -> SchedulerPart:
    """The scheduler on the mode's run log and lease, reconciling the configured source
    into the index over a connection of its own (a long reconcile never holds the
    worker's). Raises ``StoreError`` / ``LeaseError`` when the run log or the lease
    cannot open."""
    source, store, close = source_and_index(settings, backends)
    try:
        runner = job_runner(backends, source, trigger="scheduled",
                            metrics=ReindexMetrics.create(registry), store=store, on_close=close)
    except BaseException:
        close()
        raise
    try:
        runner.refresh_metrics()
        return SchedulerPart(settings, runner, runner.last_attempt())
    except BaseException:
        runner.close()
        raise


def jobs_ready(backends: Backends) -> None:
    """The index, the run log, the lease and the search run log answer (the scheduler's
    start-up check, retried while they do not)."""
    backends.store.ensure_ready()
    backends.job_backends().close()
    backends.search_run_log().close()


def run_scheduler(settings: Settings, *, port: int | None,
                  echo: Callable[[str], None]) -> None:
    """The nightly reconcile and the hourly sweep, with /metrics, until SIGTERM/SIGINT.

    ``/healthz`` and ``/readyz`` answer from the first moment: while the run log's
    store cannot be reached the scheduler is alive, not ready, and retries.
    """
    source_config(settings)  # a source to configure fails now, not after the retries
    status = StartupStatus()

    def started(running: Running) -> None:
        part = running.part("scheduler")
        assert isinstance(part, SchedulerPart) and running.server is not None
        nxt = part.next_reconcile()
        log.info("scheduler started", holder=part.runner.holder,
                 metrics_port=running.server.port,
                 next_reconcile=str(nxt) if nxt is not None else None,
                 cron=settings.reindex_cron, timezone=settings.reindex_timezone)
        echo(f"scheduler {part.runner.holder}: next reconcile "
             f"{nxt if nxt is not None else '?'}; /metrics on port {running.server.port}")

    port = settings.scheduler_metrics_port if port is None else port
    run_parts(settings, [scheduler_part], registry=process_registry(),
              probes=ProbeServer(port, "POLICY_INDEXER_SCHEDULER_METRICS_PORT", status.health),
              ready=Readiness(jobs_ready, "the run log's store", status), on_started=started)
    log.info("scheduler stopped")
