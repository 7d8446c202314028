"""The reindex job runner, the scheduler and the freshness monitor, built from settings.

Every command and the embedded run build them here, so the reconcile of
``policy-indexer reindex``, of ``policy-indexer scheduler`` and of the embedded
run are one object with one configuration, on the mode's own run log and lease.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime, timedelta

from apscheduler.schedulers.base import BaseScheduler
from prometheus_client import CollectorRegistry

from metrics.collector import FreshnessCollector
from metrics.definitions import ReindexMetrics
from metrics.monitor import FULL_EVERY, FreshnessMonitor
from policy_indexer import __version__
from policy_indexer.runtime.backends import Backends
from policy_indexer.runtime.sources import open_configured_source
from policy_indexer.settings import Settings
from reindex.jobs import JobRunner
from reindex.lease import Lease
from reindex.scheduler import build_scheduler
from retrieval.runs import RunRetention
from sources.base import Source
from store.base import Store


def source_and_index(settings: Settings,
                     backends: Backends) -> tuple[Source, Store, Callable[[], None]]:
    """The configured source and the index on a connection of its own (a part in its own
    thread: a long reconcile or a monitor cycle never holds the worker's), and what
    closes both."""
    source = open_configured_source(settings)
    try:
        store = backends.index_connection()
    except BaseException:
        source.close()
        raise

    def close() -> None:
        source.close()
        store.close()

    return source, store, close


def job_runner(
    backends: Backends,
    source: Source,
    *,
    trigger: str,
    metrics: ReindexMetrics | None = None,
    store: Store | None = None,
    on_close: Callable[[], None] | None = None,
) -> JobRunner:
    """The runner on the mode's run log and lease; closing it closes those (and ``on_close``).

    Its sweep also prunes the search run log (``search_runs_retention_days``,
    ``search_runs_max``).

    The caller owns ``source`` (and closes it).

    ``store``: the index to reconcile, when it must be another connection than
    ``backends.store`` (the embedded run gives the scheduler its own SQLite
    connection, so a long reconcile never holds the worker's).
    """
    settings = backends.settings
    index = store if store is not None else backends.store
    index.ensure_ready()
    jobs = backends.job_backends()
    try:
        search_runs = backends.search_run_log()
    except BaseException:
        jobs.close()
        raise

    def close() -> None:
        search_runs.close()
        jobs.close()
        if on_close is not None:
            on_close()

    return JobRunner(
        source=source,
        store=index,
        run_log=jobs.run_log,
        lease=Lease(jobs.lease),
        lease_ttl=timedelta(seconds=settings.scheduler_lease_seconds),
        metrics=metrics,
        max_delete_fraction=settings.reindex_max_delete_fraction,
        batch_size=settings.reindex_batch_size,
        sweep_grace=timedelta(seconds=settings.sweep_grace_seconds),
        trigger=trigger,
        spacing=(timedelta(seconds=settings.reindex_misfire_grace_seconds)
                 if trigger == "scheduled" else None),
        on_close=close,
        search_runs=RunRetention(search_runs, days=settings.search_runs_retention_days,
                                 max_runs=settings.search_runs_max),
    )


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


def freshness_monitor(
    settings: Settings, source: Source, store: Store,
    refused: Callable[[], Collection[tuple[str, int]]] | None = None,
) -> FreshnessMonitor:
    series = settings.monitor_max_document_series
    return FreshnessMonitor(
        source, store,
        max_series=None if series == "all" else series,
        grace=timedelta(seconds=settings.sweep_grace_seconds),
        refused=refused,
        # incremental cycles, a full one every hour (docs/monitoring.md)
        full_every=FULL_EVERY,
    )


def register_freshness(
    settings: Settings, monitor: FreshnessMonitor, registry: CollectorRegistry
) -> None:
    """The monitor's gauges, computed at scrape time from its last cycle."""
    registry.register(FreshnessCollector(
        monitor,
        lag_bound_seconds=settings.freshness_lag_bound_seconds,
        leftover_bound_seconds=settings.leftover_bound_seconds,
        version=__version__,
    ))
