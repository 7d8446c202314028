"""The schedule: the reconcile nightly by cron, the sweep at an interval (APScheduler 3.x).

Both jobs run with ``max_instances=1`` (a run still going when the next is due
is not doubled), ``coalesce=True`` (runs missed while the process was down or
busy collapse into one) and a ``misfire_grace_time`` (a run that could not
start on time still starts up to that late, then is skipped and logged). Each
job takes its lease first (``JobRunner``), so with several replicas only one
runs each occurrence. A third, unleased job re-reads the last successes from
the shared run log every minute, so every replica exports the same
``policy_indexer_reindex_last_success_timestamp_seconds``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import structlog
from apscheduler.events import EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import BaseScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from reindex.errors import LeaseError
from reindex.jobs import RECONCILE, SWEEP, JobRunner
from store.errors import StoreError

log = structlog.get_logger(__name__)

REFRESH_METRICS = "refresh-metrics"


def _guarded(job: str, call: Callable[[], object]) -> Callable[[], None]:
    """A job body that logs a failure to take the lease or record the run, and returns."""

    def run() -> None:
        try:
            call()
        except (LeaseError, StoreError) as exc:
            log.error("job could not run", job=job, error=f"{type(exc).__name__}: {exc}")

    run.__name__ = f"{job}_job"
    return run


def previous_occurrence(trigger: CronTrigger, now: datetime) -> datetime | None:
    """The latest fire time of ``trigger`` at or before ``now`` within two days, or None."""
    fire = trigger.get_next_fire_time(None, now - timedelta(days=2))
    latest = None
    for _ in range(10_000):  # a cron firing every minute: 2,880 steps
        if fire is None or fire > now:
            return latest
        latest = fire
        fire = trigger.get_next_fire_time(fire, fire + timedelta(seconds=1))
    return latest


def build_scheduler(
    runner: JobRunner,
    *,
    cron: str,
    timezone: str,
    sweep_interval: timedelta,
    misfire_grace: timedelta,
    metrics_refresh: timedelta = timedelta(minutes=1),
    scheduler: BaseScheduler | None = None,
    last_attempt: datetime | None = None,
) -> BaseScheduler:
    """The three jobs. ``last_attempt``: when the last reconcile (any replica) started.

    APScheduler keeps its jobs in memory, so an occurrence that passed while no
    scheduler was running would be forgotten. When the latest occurrence is
    after ``last_attempt``, the reconcile is scheduled for that occurrence:
    APScheduler then runs it at once if it is within the misfire grace time
    (a restart at 02:20 still runs the 02:00 reconcile), and skips it otherwise.
    """
    zone = ZoneInfo(timezone)
    sched = scheduler if scheduler is not None else BackgroundScheduler(timezone=zone)
    common: dict[str, Any] = {
        "max_instances": 1,
        "coalesce": True,
        "misfire_grace_time": max(1, int(misfire_grace.total_seconds())),
        "replace_existing": True,
    }
    nightly = CronTrigger.from_crontab(cron, timezone=zone)
    now = datetime.now(zone)
    missed = previous_occurrence(nightly, now)
    common_reconcile = common
    if missed is not None and (last_attempt is None or last_attempt < missed):
        if now - missed <= misfire_grace:
            common_reconcile = {**common, "next_run_time": missed}
            log.warning("the last reconcile occurrence has not run; running it now",
                        occurrence=missed.isoformat())
        elif last_attempt is not None:
            # Beyond the grace: skipped, as APScheduler would. The 26-hour alert
            # fires if no later run succeeds. (A fresh install has nothing to catch up.)
            log.warning("the last reconcile occurrence was missed beyond the grace; "
                        "the next one runs as scheduled", occurrence=missed.isoformat())
    sched.add_job(
        _guarded(RECONCILE, runner.reconcile), nightly,
        id=RECONCILE, name=f"reconcile ({cron} {timezone})", **common_reconcile,
    )
    sched.add_job(
        _guarded(SWEEP, runner.sweep), IntervalTrigger(seconds=sweep_interval.total_seconds()),
        id=SWEEP, name="sweep", **common,
    )
    sched.add_job(
        _guarded(REFRESH_METRICS, runner.refresh_metrics),
        IntervalTrigger(seconds=metrics_refresh.total_seconds()),
        id=REFRESH_METRICS, name="refresh metrics from the run log", **common,
    )

    def on_missed(event: JobExecutionEvent) -> None:
        log.error("job missed its time beyond the misfire grace", job=event.job_id,
                  scheduled=str(event.scheduled_run_time))

    sched.add_listener(on_missed, EVENT_JOB_MISSED)
    return sched
