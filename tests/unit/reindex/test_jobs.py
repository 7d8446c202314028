from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from support.reindex_library import Library

from indexing.core import Indexer
from metrics.definitions import ReindexMetrics
from reindex.jobs import JobRunner
from reindex.lease import InMemoryLeaseBackend, Lease
from reindex.runs import InMemoryRunLog, RunRecord
from sources.changelog import ChangeLogSource
from store.errors import TransientStoreError
from store.memory import InMemoryStore

TTL = timedelta(minutes=5)


def make_runner(tmp_path: Path, *, holder: str = "a", backend: InMemoryLeaseBackend | None = None,
                run_log: InMemoryRunLog | None = None) -> tuple[JobRunner, CollectorRegistry,
                                                                Library]:
    library = Library(tmp_path / "changes.jsonl")
    for n in range(10):
        library.upsert(f"doc-{n}", 1)
    library.write()
    store = InMemoryStore()
    registry = CollectorRegistry()
    runner = JobRunner(
        source=ChangeLogSource(library.path), store=store,
        run_log=run_log or InMemoryRunLog(), lease=Lease(backend or InMemoryLeaseBackend()),
        lease_ttl=TTL, holder=holder, metrics=ReindexMetrics.create(registry),
    )
    return runner, registry, library


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(f"policy_indexer_{name}", labels)


def test_a_run_is_recorded_and_exported(tmp_path: Path) -> None:
    runner, registry, _ = make_runner(tmp_path)
    report = runner.reconcile()
    assert report is not None and report.decided == {"reindex": 10}
    (record,) = runner.run_log.recent("reconcile")
    assert record.outcome == "success" and record.trigger == "scheduled"
    assert record.ended_at is not None and record.ended_at >= record.started_at
    assert record.counts["decided_reindex"] == 10 and record.counts["applied_indexed"] == 10
    assert value(registry, "reindex_last_success_timestamp_seconds") == pytest.approx(
        record.ended_at.timestamp(), abs=1e-3)
    assert value(registry, "reindex_last_outcome", outcome="success") == 1
    assert value(registry, "reindex_last_documents", decision="reindex") == 10
    assert value(registry, "reindex_runs_total", job="reconcile", outcome="success") == 1


def test_a_failed_run_is_recorded_failed_and_the_success_time_does_not_move(
    tmp_path: Path,
) -> None:
    runner, registry, library = make_runner(tmp_path)
    assert runner.reconcile() is not None
    success_at = value(registry, "reindex_last_success_timestamp_seconds")
    library.path.write_text(library.path.read_text() + "{broken\n")
    report = runner.reconcile()
    assert report is not None and report.error is not None
    latest = runner.run_log.recent("reconcile")[0]
    assert latest.outcome == "failed" and latest.error is not None
    assert "not JSON" in latest.error
    assert value(registry, "reindex_last_outcome", outcome="failed") == 1
    assert value(registry, "reindex_last_outcome", outcome="success") == 0
    assert value(registry, "reindex_last_success_timestamp_seconds") == success_at
    assert value(registry, "reindex_runs_total", job="reconcile", outcome="failed") == 1


def test_a_replica_without_the_lease_records_nothing(tmp_path: Path) -> None:
    backend, run_log = InMemoryLeaseBackend(), InMemoryRunLog()
    first, _, _ = make_runner(tmp_path, holder="a", backend=backend, run_log=run_log)
    second, registry, _ = make_runner(tmp_path, holder="b", backend=backend, run_log=run_log)
    held, _ = first.lease.acquire("reconcile", "a", TTL)
    assert held is not None
    assert second.reconcile() is None
    assert run_log.recent("reconcile") == []
    assert value(registry, "scheduler_lease_skips_total", job="reconcile") == 1


def test_a_stop_request_ends_the_run_as_failed_and_the_next_finishes(tmp_path: Path) -> None:
    runner, _, library = make_runner(tmp_path)
    runner.stop_event.set()
    report = runner.reconcile()
    assert report is not None and report.outcome.value == "failed"
    assert "RunInterrupted" in (report.error or "")
    runner.stop_event.clear()
    report = runner.reconcile()
    assert report is not None and report.outcome.value == "success"
    assert report.decided == {"reindex": 10}
    assert len(library.events) == 10


def test_metrics_follow_successes_recorded_by_other_processes(tmp_path: Path) -> None:
    runner, registry, _ = make_runner(tmp_path)
    ended = datetime(2026, 2, 1, 2, 5, tzinfo=UTC)
    runner.run_log.save(RunRecord("x", "reconcile", "manual", "other:1", ended - timedelta(
        minutes=5), ended, "success"))
    assert value(registry, "reindex_last_success_timestamp_seconds") == 0
    runner.refresh_metrics()
    assert value(registry, "reindex_last_success_timestamp_seconds") == ended.timestamp()


def test_the_sweep_job_is_recorded(tmp_path: Path) -> None:
    runner, registry, library = make_runner(tmp_path)
    processor = Indexer(runner.store)
    for event in library.events:
        processor.apply_one(event)
    report = runner.sweep()
    assert report is not None
    (record,) = runner.run_log.recent("sweep")
    assert record.outcome == "success" and record.counts["examined"] > 0
    assert value(registry, "reindex_runs_total", job="sweep", outcome="success") == 1
    assert (value(registry, "sweep_last_success_timestamp_seconds") or 0) > 0


class UnreachableRunLog(InMemoryRunLog):
    def save(self, record: RunRecord) -> None:
        raise TransientStoreError("save run: Elasticsearch unreachable")


def test_a_run_that_cannot_be_recorded_is_a_failure_in_the_metrics(tmp_path: Path) -> None:
    runner, registry, _ = make_runner(tmp_path, run_log=UnreachableRunLog())
    with pytest.raises(TransientStoreError):
        runner.reconcile()
    assert value(registry, "reindex_last_outcome", outcome="failed") == 1
    assert value(registry, "reindex_runs_total", job="reconcile", outcome="failed") == 1
    assert runner.store.get_state("doc-0") is None  # nothing done without a record
    assert runner.lease.acquire("reconcile", "b", TTL)[0] is not None  # lease given back
