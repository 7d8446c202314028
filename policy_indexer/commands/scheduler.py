"""``policy-indexer scheduler``: the nightly reconcile and the hourly sweep, with /metrics.

Runs until SIGTERM or SIGINT: then a running reconcile stops between two
documents (recorded as failed, "interrupted"; the next run finishes it), the
scheduler waits for the running job to return and gives its lease back.
Several replicas may run; a lease per job lets one act per occurrence.
"""

from __future__ import annotations

import signal
import threading
from datetime import datetime, timedelta
from types import FrameType

import click
import structlog
from apscheduler.schedulers.base import BaseScheduler
from prometheus_client import CollectorRegistry, start_http_server

from metrics.definitions import ReindexMetrics
from policy_indexer.commands.reindex import open_index, open_runner
from policy_indexer.settings import Settings
from policy_indexer.sources import SourceNotConfiguredError, open_configured_source
from reindex.errors import LeaseError
from reindex.jobs import JobRunner
from reindex.scheduler import build_scheduler
from store.errors import StoreError

log = structlog.get_logger(__name__)


def scheduler_for(
    settings: Settings, runner: JobRunner, last_attempt: datetime | None
) -> BaseScheduler:
    """The nightly reconcile, hourly sweep and metrics refresh, as the settings say."""
    return build_scheduler(
        runner,
        cron=settings.reindex_cron,
        timezone=settings.reindex_timezone,
        sweep_interval=timedelta(seconds=settings.sweep_interval_seconds),
        misfire_grace=timedelta(seconds=settings.reindex_misfire_grace_seconds),
        last_attempt=last_attempt,
    )


@click.command()
@click.option("--port", type=int, default=None,
              help="Port of /metrics (default: settings.scheduler_metrics_port; 0: any).")
@click.pass_obj
def scheduler(settings: Settings, port: int | None) -> None:
    """Run the reconcile on its cron schedule and the sweep at its interval."""
    try:
        source = open_configured_source(settings)
    except (SourceNotConfiguredError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    registry = CollectorRegistry()
    metrics = ReindexMetrics.create(registry)
    store = open_index(settings)
    try:
        runner = open_runner(settings, source, store, trigger="scheduled", metrics=metrics)
        runner.refresh_metrics()
        last_attempt = runner.last_attempt()
    except (StoreError, LeaseError) as exc:
        store.close()
        source.close()
        raise click.ClickException(f"scheduler cannot start: {exc}") from exc
    server, _thread = start_http_server(
        settings.scheduler_metrics_port if port is None else port,
        addr=settings.metrics_host, registry=registry,
    )
    sched = scheduler_for(settings, runner, last_attempt)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("stop requested", signal=signal.Signals(signum).name)
        runner.stop_event.set()
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    sched.start()
    job = sched.get_job("reconcile")
    log.info("scheduler started", holder=runner.holder, metrics_port=server.server_port,
             next_reconcile=str(job.next_run_time) if job else None,
             cron=settings.reindex_cron, timezone=settings.reindex_timezone)
    click.echo(f"scheduler {runner.holder}: next reconcile "
               f"{job.next_run_time if job else '?'}; /metrics on port {server.server_port}")
    try:
        while not stop.wait(1.0):
            pass
    finally:
        sched.shutdown(wait=True)
        server.shutdown()
        runner.close()
        log.info("scheduler stopped")
