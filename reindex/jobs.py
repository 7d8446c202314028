"""The two jobs, each in one try/finally that maps what happened to a recorded outcome.

``JobRunner.reconcile`` and ``JobRunner.sweep``: take the job's lease (renewed
while the job runs), save a ``running`` record, run, save the ended record with
outcome and counts, update the metrics, give the lease back. A run that cannot
take the lease returns None and records nothing (another replica acts). Used by
the scheduler and by ``policy-indexer reindex``, so a run by hand is recorded
and leased like a scheduled one.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from deleter.sweep import DEFAULT_GRACE, SweepReport, sweep
from indexing.core import Indexer
from metrics.definitions import ReindexMetrics
from reindex.errors import LeaseError
from reindex.lease import Lease, LeaseRecord, utcnow
from reindex.limits import BATCH_SIZE, MAX_DELETE_FRACTION
from reindex.model import Outcome, ReconcileReport
from reindex.reconcile import ReconcileOptions, Reconciler
from reindex.runs import RunLog, RunRecord
from retrieval.runs import RunRetention
from sources.base import Source
from store.base import Store
from store.errors import StoreError

log = structlog.get_logger(__name__)

RECONCILE = "reconcile"
SWEEP = "sweep"


def default_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class JobRunner:
    source: Source
    store: Store
    run_log: RunLog
    lease: Lease
    lease_ttl: timedelta
    holder: str = field(default_factory=default_holder)
    metrics: ReindexMetrics | None = None
    max_delete_fraction: float = MAX_DELETE_FRACTION
    batch_size: int = BATCH_SIZE
    sweep_grace: timedelta = DEFAULT_GRACE
    trigger: str = "scheduled"
    spacing: timedelta | None = None  # scheduled runs: see reindex.lease
    stop_event: threading.Event = field(default_factory=threading.Event)
    on_close: Callable[[], None] = lambda: None
    last_skip: str | None = None  # why the last job could not take its lease
    # the search run log's retention, enforced by the sweep (age and count)
    search_runs: RunRetention | None = None

    def reconcile(
        self,
        *,
        dry_run: bool = False,
        allow_mass_delete: bool = False,
        checkpoint: Callable[[str], None] = lambda _step: None,
    ) -> ReconcileReport | None:
        with self._leased(RECONCILE) as lost:
            if lost is None:
                return None
            try:
                record = self._start(RECONCILE, dry_run)
            except StoreError:  # the run log is unreachable: the run cannot be recorded
                if self.metrics is not None and not dry_run:
                    self.metrics.record_reconcile("failed", 0.0, {}, utcnow().timestamp())
                raise
            started = time.monotonic()
            report = ReconcileReport(dry_run=dry_run, error="the run ended unexpectedly")
            try:
                report = Reconciler(
                    self.source,
                    self.store,
                    indexer=Indexer(self.store, checkpoint=checkpoint),
                    options=ReconcileOptions(dry_run, allow_mass_delete,
                                             self.max_delete_fraction),
                    should_stop=lambda: self.stop_event.is_set() or lost.is_set(),
                    batch_size=self.batch_size,
                ).run()
                if lost.is_set() and report.error is None:
                    report.error = "the lease was lost during the run"
            finally:
                ended = utcnow()
                log.info("reconcile ended", outcome=report.outcome.value, run_id=record.run_id,
                         decided=dict(report.decided), applied=dict(report.applied),
                         seconds=report.seconds)
                if self.metrics is not None and not dry_run:
                    self.metrics.record_reconcile(
                        report.outcome.value, time.monotonic() - started,
                        dict(report.decided), ended.timestamp(),
                    )
                self._save(record.finished(
                    ended, report.outcome.value, report.counts(), _error(report)
                ))
            return report

    def sweep(self) -> SweepReport | None:
        with self._leased(SWEEP) as lost:
            if lost is None:
                return None
            record = self._start(SWEEP, False)
            outcome, error, report = Outcome.FAILED, None, None
            pruned: int | None = None
            try:
                report = sweep(self.store, grace=self.sweep_grace)
                outcome = Outcome.SUCCESS
            except StoreError as exc:
                error = f"{type(exc).__name__}: {exc}"
                log.error("sweep failed", error=error)
            finally:
                pruned = self._prune_search_runs()
                counts = {"examined": report.examined, "deleted": report.deleted} if report else {}
                if pruned is not None:
                    counts["search_runs_pruned"] = pruned
                ended = utcnow()
                if self.metrics is not None:
                    self.metrics.runs.labels(job=SWEEP, outcome=outcome.value).inc()
                    if outcome is Outcome.SUCCESS:
                        self.metrics.sweep_last_success.set(ended.timestamp())
                    for reason, count in (report.leftovers.items() if report else ()):
                        self.metrics.sweep_leftovers.labels(reason=reason).inc(count)
                self._save(record.finished(ended, outcome.value, counts, error))
            return report

    def _prune_search_runs(self) -> int | None:
        """Old search runs removed (None: no run log, or it failed: logged, the sweep's
        own outcome stands; the next hour tries again)."""
        if self.search_runs is None:
            return None
        try:
            pruned = self.search_runs.prune()
        except Exception as exc:  # the run log's failure is not the sweep's
            log.error("search runs not pruned", error=f"{type(exc).__name__}: {exc}")
            return None
        log.info("search runs pruned", pruned=pruned)
        return pruned

    def refresh_metrics(self) -> None:
        """Export the last successes from the shared run log (any replica, runs by hand)."""
        if self.metrics is None:
            return
        for job, gauge in ((RECONCILE, self.metrics.last_success),
                           (SWEEP, self.metrics.sweep_last_success)):
            last = self.run_log.last_success(job)
            if last is not None and last.ended_at is not None:
                gauge.set(last.ended_at.timestamp())

    def last_attempt(self, job: str = RECONCILE) -> datetime | None:
        """When the latest non-dry run of ``job`` started (any replica, any outcome)."""
        runs = [r for r in self.run_log.recent(job, limit=20) if not r.dry_run]
        return runs[0].started_at if runs else None

    def close(self) -> None:
        self.on_close()

    def _save(self, record: RunRecord) -> None:
        """Record the end of a run; a failure to record is logged (the metrics have it)."""
        try:
            self.run_log.save(record)
        except StoreError as exc:
            log.error("could not record the end of the run", job=record.job,
                      run_id=record.run_id, outcome=record.outcome, error=str(exc))

    def _start(self, job: str, dry_run: bool) -> RunRecord:
        record = RunRecord(uuid.uuid4().hex, job, self.trigger, self.holder, utcnow(),
                           dry_run=dry_run)
        self.run_log.save(record)
        log.info("job started", job=job, run_id=record.run_id, trigger=self.trigger)
        return record

    @contextmanager
    def _leased(self, job: str) -> Iterator[threading.Event | None]:
        """Yields an event set if the lease is lost mid-run, or None if not taken."""
        held, why = self.lease.acquire(job, self.holder, self.lease_ttl, spacing=self.spacing)
        self.last_skip = why
        if held is None:
            log.info("job left to another replica", job=job, reason=why)
            if self.metrics is not None:
                self.metrics.lease_skips.labels(job=job).inc()
            yield None
            return
        lost, done = threading.Event(), threading.Event()
        keeper = threading.Thread(target=self._keep, args=(held, lost, done),
                                  name=f"lease-{job}", daemon=True)
        keeper.start()
        try:
            yield lost
        finally:
            done.set()
            keeper.join()
            try:
                self.lease.release(held)
            except LeaseError as exc:  # it expires by itself
                log.warning("could not release the lease", job=job, error=str(exc))

    def _keep(self, held: LeaseRecord, lost: threading.Event, done: threading.Event) -> None:
        interval = self.lease_ttl.total_seconds() / 3
        while not done.wait(interval):
            try:
                renewed = self.lease.renew(held, self.lease_ttl)
            except LeaseError as exc:
                log.warning("lease renewal failed", job=held.job, error=str(exc))
                continue  # try again; it is lost only when someone else holds it
            if renewed is None:
                log.error("lease lost to another replica", job=held.job)
                lost.set()
                return
            held = renewed


def _error(report: ReconcileReport) -> str | None:
    if report.error:
        return report.error
    if report.failures:
        return f"{len(report.failures)} document(s) failed: " + "; ".join(report.failures[:5])
    if report.refused:
        return (f"refused: {report.decided.get('delete', 0)} deletions above the cap of "
                f"{report.deletions_allowed}; confirm with --allow-mass-delete")
    return None
