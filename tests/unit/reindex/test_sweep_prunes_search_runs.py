"""The hourly sweep also enforces the search run log's retention (age and count), and a run
log that fails to prune never fails the sweep."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from support.reindex_library import Library

from reindex.jobs import JobRunner
from reindex.lease import InMemoryLeaseBackend, Lease
from reindex.runs import InMemoryRunLog
from retrieval.runs import MemoryRunLog, RunLogError, RunRetention, SearchRun, new_run_id
from sources.changelog import ChangeLogSource
from store.memory import InMemoryStore

NOW = datetime(2027, 5, 1, tzinfo=UTC)


def runner(tmp_path: Path, retention: RunRetention) -> JobRunner:
    library = Library(tmp_path / "changes.jsonl")
    library.upsert("doc-1", 1)
    library.write()
    return JobRunner(source=ChangeLogSource(library.path), store=InMemoryStore(),
                     run_log=InMemoryRunLog(), lease=Lease(InMemoryLeaseBackend()),
                     lease_ttl=timedelta(minutes=5), search_runs=retention)


def run(age: timedelta) -> SearchRun:
    return SearchRun(new_run_id(), "support-bot", NOW - age, "q", (), date(2027, 5, 1), (),
                     "ok")


def test_the_sweep_removes_old_search_runs_and_says_how_many(tmp_path: Path) -> None:
    log = MemoryRunLog()
    kept = run(timedelta(days=1))
    for made in (run(timedelta(days=40)), run(timedelta(days=31)), kept):
        log.record(made)
    job = runner(tmp_path, RunRetention(log, days=30, max_runs=10, clock=lambda: NOW))
    assert job.sweep() is not None
    assert log.count() == 1
    assert log.get(kept.run_id, "support-bot") == kept
    (record,) = job.run_log.recent("sweep")
    assert record.outcome == "success"
    assert record.counts["search_runs_pruned"] == 2


class _Failing(MemoryRunLog):
    def prune(self, *, before: datetime, keep: int) -> int:
        raise RunLogError("the search run log is unreachable")


def test_a_run_log_that_cannot_prune_does_not_fail_the_sweep(tmp_path: Path) -> None:
    job = runner(tmp_path, RunRetention(_Failing(), clock=lambda: NOW))
    assert job.sweep() is not None
    (record,) = job.run_log.recent("sweep")
    assert record.outcome == "success"
    assert "search_runs_pruned" not in record.counts
