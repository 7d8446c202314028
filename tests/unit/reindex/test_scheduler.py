"""The schedule, driven by APScheduler's own mechanisms (no waiting for 02:00)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from apscheduler.events import EVENT_JOB_EXECUTED, EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.schedulers.background import BackgroundScheduler
from support.reindex_library import Library

from reindex.jobs import JobRunner
from reindex.lease import InMemoryLeaseBackend, Lease
from reindex.runs import InMemoryRunLog
from reindex.scheduler import build_scheduler
from sources.changelog import ChangeLogSource
from store.memory import InMemoryStore

PARIS = ZoneInfo("Europe/Paris")


@pytest.fixture
def runner(tmp_path: Path) -> JobRunner:
    library = Library(tmp_path / "changes.jsonl")
    library.upsert("refund", 1)
    library.write()
    return JobRunner(ChangeLogSource(library.path), InMemoryStore(), InMemoryRunLog(),
                     Lease(InMemoryLeaseBackend()), lease_ttl=timedelta(minutes=5),
                     spacing=timedelta(minutes=30))


@pytest.fixture
def scheduler(runner: JobRunner) -> Iterator[BackgroundScheduler]:
    sched = BackgroundScheduler(timezone=PARIS)
    build_scheduler(runner, cron="0 2 * * *", timezone="Europe/Paris",
                    sweep_interval=timedelta(hours=1), misfire_grace=timedelta(minutes=30),
                    scheduler=sched, last_attempt=datetime.now(PARIS))
    sched.start(paused=True)
    yield sched
    sched.shutdown(wait=True)


def next_two_am(now: datetime) -> datetime:
    today = datetime.combine(now.date(), time(2), tzinfo=PARIS)
    return today if today > now else datetime.combine(
        now.date() + timedelta(days=1), time(2), tzinfo=PARIS)


def when_done(sched: BackgroundScheduler, job_id: str, mask: int) -> threading.Event:
    done = threading.Event()

    def listener(event: JobExecutionEvent) -> None:
        if event.job_id == job_id:
            done.set()

    sched.add_listener(listener, mask)
    return done


def test_jobs_are_configured_as_asked(scheduler: BackgroundScheduler) -> None:
    reconcile, sweep = scheduler.get_job("reconcile"), scheduler.get_job("sweep")
    for job in (reconcile, sweep):
        assert (job.max_instances, job.coalesce, job.misfire_grace_time) == (1, True, 1800)
    assert reconcile.next_run_time == next_two_am(datetime.now(PARIS))
    # 02:00 Paris time, summer and winter: the zone, not UTC, decides.
    summer = reconcile.trigger.get_next_fire_time(None, datetime(2026, 7, 1, 12, tzinfo=PARIS))
    winter = reconcile.trigger.get_next_fire_time(None, datetime(2026, 1, 1, 12, tzinfo=PARIS))
    assert summer.isoformat() == "2026-07-02T02:00:00+02:00"
    assert winter.isoformat() == "2026-01-02T02:00:00+01:00"


def test_the_reconcile_fires_when_its_time_comes(
    scheduler: BackgroundScheduler, runner: JobRunner
) -> None:
    job = scheduler.get_job("reconcile")
    nightly = job.next_run_time
    done = when_done(scheduler, "reconcile", EVENT_JOB_EXECUTED)
    job.modify(next_run_time=datetime.now(PARIS))  # its time has come
    scheduler.resume()
    assert done.wait(30), "the reconcile did not fire"
    (record,) = runner.run_log.recent("reconcile")
    assert record.outcome == "success" and record.trigger == "scheduled"
    assert runner.store.get_state("refund") is not None
    # ...and the next run is the following 02:00 again, computed by the cron trigger.
    assert scheduler.get_job("reconcile").next_run_time == nightly


def test_a_run_missed_beyond_the_grace_is_skipped_not_run_late(
    scheduler: BackgroundScheduler, runner: JobRunner
) -> None:
    missed = when_done(scheduler, "reconcile", EVENT_JOB_MISSED)
    now = datetime.now(PARIS)
    # The nightly time moved 12 hours away: run between 02:00 and 02:31, this test
    # would otherwise find today's 02:00 occurrence due within the grace, and run it.
    far = now + timedelta(hours=12)
    scheduler.reschedule_job("reconcile", trigger="cron", hour=far.hour, minute=far.minute,
                             timezone=PARIS)
    scheduler.get_job("reconcile").modify(next_run_time=now - timedelta(minutes=31))
    scheduler.resume()
    assert missed.wait(30)
    assert runner.run_log.recent("reconcile") == []


def test_dst_start_night_still_runs(scheduler: BackgroundScheduler) -> None:
    # 2026-03-29 02:00 does not exist in Paris (clocks jump 02:00 -> 03:00).
    trigger = scheduler.get_job("reconcile").trigger
    fire = trigger.get_next_fire_time(None, datetime(2026, 3, 28, 12, tzinfo=PARIS))
    assert fire.astimezone(UTC) == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)  # 03:00 CEST


def cron_at(moment: datetime) -> str:
    return f"{moment.minute} {moment.hour} * * *"


def test_an_occurrence_missed_while_no_scheduler_ran_is_caught_up_within_the_grace(
    runner: JobRunner,
) -> None:
    occurrence = (datetime.now(PARIS) - timedelta(minutes=10)).replace(second=0, microsecond=0)
    sched = BackgroundScheduler(timezone=PARIS)
    build_scheduler(runner, cron=cron_at(occurrence), timezone="Europe/Paris",
                    sweep_interval=timedelta(hours=1), misfire_grace=timedelta(minutes=30),
                    scheduler=sched, last_attempt=occurrence - timedelta(days=1))
    outcome = when_done(sched, "reconcile", EVENT_JOB_EXECUTED | EVENT_JOB_MISSED)
    sched.start()
    try:
        assert outcome.wait(30)
    finally:
        sched.shutdown(wait=True)
    assert len(runner.run_log.recent("reconcile")) == 1


@pytest.mark.parametrize("last_attempt_days_ago", [1, None])
def test_an_occurrence_missed_beyond_the_grace_is_not_run_and_the_next_one_is_kept(
    runner: JobRunner, last_attempt_days_ago: int | None
) -> None:
    """Beyond the grace (or on a fresh install) nothing runs at start and nothing errors."""
    occurrence = (datetime.now(PARIS) - timedelta(minutes=45)).replace(second=0, microsecond=0)
    last = None if last_attempt_days_ago is None else occurrence - timedelta(days=1)
    sched = BackgroundScheduler(timezone=PARIS)
    build_scheduler(runner, cron=cron_at(occurrence), timezone="Europe/Paris",
                    sweep_interval=timedelta(hours=1), misfire_grace=timedelta(minutes=30),
                    scheduler=sched, last_attempt=last)
    sched.start(paused=True)
    try:
        assert sched.get_job("reconcile").next_run_time == occurrence + timedelta(days=1)
    finally:
        sched.shutdown(wait=True)
    assert runner.run_log.recent("reconcile") == []


def test_no_catch_up_when_the_occurrence_already_ran(runner: JobRunner) -> None:
    occurrence = (datetime.now(PARIS) - timedelta(minutes=10)).replace(second=0, microsecond=0)
    sched = BackgroundScheduler(timezone=PARIS)
    build_scheduler(runner, cron=cron_at(occurrence), timezone="Europe/Paris",
                    sweep_interval=timedelta(hours=1), misfire_grace=timedelta(minutes=30),
                    scheduler=sched, last_attempt=occurrence + timedelta(seconds=5))
    sched.start(paused=True)
    try:
        assert sched.get_job("reconcile").next_run_time == occurrence + timedelta(days=1)
    finally:
        sched.shutdown(wait=True)
