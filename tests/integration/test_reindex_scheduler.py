"""Two scheduler replicas on one Elasticsearch: each job occurrence runs once."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import pytest
from apscheduler.events import EVENT_JOB_EXECUTED, JobExecutionEvent
from apscheduler.schedulers.background import BackgroundScheduler
from prometheus_client import CollectorRegistry
from support.index_equality import assert_index_equals, expected_index
from support.reindex_library import Library
from support.waiting import wait_until
from support.workers import CLI, free_port

from metrics.definitions import ReindexMetrics
from policy_indexer.runtime.backends import KafkaBackends
from policy_indexer.runtime.jobs import job_runner
from policy_indexer.settings import Settings
from reindex.backends_es import ElasticsearchRunLog
from reindex.jobs import JobRunner
from reindex.scheduler import build_scheduler
from sources.changelog import ChangeLogSource
from store.elasticsearch import ElasticsearchStore

pytestmark = pytest.mark.services
ZONE = ZoneInfo("Europe/Paris")


@pytest.fixture
def settings(elasticsearch_url: str, unique: str, tmp_path: Path) -> Iterator[Settings]:
    library = Library(tmp_path / "changes.jsonl")
    for n in range(5):
        library.upsert(f"doc-{n}", 1)
    library.write()
    yield Settings(pipeline="kafka", elasticsearch_url=elasticsearch_url, index_prefix=unique,
                   source_kind="changelog", source_path=str(library.path),
                   reindex_timezone="Europe/Paris", sweep_grace_seconds=0)
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.delete_everything()
    store.client.options(ignore_status=404).indices.delete(index=f"{unique}-reindex-*")
    store.close()


def replica(settings: Settings, name: str) -> tuple[JobRunner, BackgroundScheduler,
                                                    CollectorRegistry]:
    registry = CollectorRegistry()
    store = ElasticsearchStore.connect(settings.elasticsearch_url, settings.index_prefix)
    source = ChangeLogSource(str(settings.source_path))

    def close() -> None:
        source.close()
        store.close()

    runner = job_runner(KafkaBackends(settings, store), source, trigger="scheduled",
                        metrics=ReindexMetrics.create(registry), on_close=close)
    runner.holder = name
    sched = BackgroundScheduler(timezone=ZONE)
    build_scheduler(runner, cron=settings.reindex_cron, timezone=settings.reindex_timezone,
                    sweep_interval=timedelta(hours=1),
                    misfire_grace=timedelta(minutes=30),
                    scheduler=sched)
    sched.start(paused=True)
    return runner, sched, registry


def test_two_schedulers_started_at_once_run_each_job_once(settings: Settings) -> None:
    replicas = [replica(settings, "replica-a"), replica(settings, "replica-b")]
    finished: list[threading.Event] = []
    try:
        for _, sched, _ in replicas:
            for job_id in ("reconcile", "sweep"):
                done = threading.Event()

                def listener(event: JobExecutionEvent, job_id: str = job_id,
                             done: threading.Event = done) -> None:
                    if event.job_id == job_id:
                        done.set()

                sched.add_listener(listener, EVENT_JOB_EXECUTED)
                finished.append(done)
                sched.get_job(job_id).modify(next_run_time=datetime.now(ZONE))
        for _, sched, _ in replicas:
            sched.resume()
        assert all(done.wait(60) for done in finished), "a job did not fire"
    finally:
        for runner, sched, _ in replicas:
            sched.shutdown(wait=True)
            runner.close()

    store = ElasticsearchStore.connect(settings.elasticsearch_url, settings.index_prefix)
    try:
        runs = ElasticsearchRunLog(store.client, settings.index_prefix)
        reconciles, sweeps = runs.recent("reconcile"), runs.recent("sweep")
        assert [r.outcome for r in reconciles] == ["success"]
        assert [r.outcome for r in sweeps] == ["success"]
        skips = {
            job: sum(registry.get_sample_value("policy_indexer_scheduler_lease_skips_total",
                                               {"job": job}) or 0
                     for _, _, registry in replicas)
            for job in ("reconcile", "sweep")
        }
        assert skips == {"reconcile": 1, "sweep": 1}
        store.refresh()
        assert len(list(store.iter_states())) == 5
    finally:
        store.close()


def test_the_scheduler_process_exports_the_last_success_and_stops_on_sigterm(
    settings: Settings, tmp_path: Path
) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "POLICY_INDEXER_PIPELINE": "kafka",
        "POLICY_INDEXER_ELASTICSEARCH_URL": settings.elasticsearch_url,
        "POLICY_INDEXER_INDEX_PREFIX": settings.index_prefix,
        "POLICY_INDEXER_SOURCE_KIND": "changelog",
        "POLICY_INDEXER_SOURCE_PATH": str(settings.source_path),
        "POLICY_INDEXER_LOG_LEVEL": "WARNING",
    }
    manual = subprocess.run([CLI, "reindex"], env=env, capture_output=True, text=True,
                            timeout=120, check=False)
    assert manual.returncode == 0, manual.stderr
    port = free_port()
    with subprocess.Popen([CLI, "scheduler", "--port", str(port)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            banner = proc.stdout.readline()
            assert "next reconcile" in banner and "02:00:00+" in banner, banner
            body = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    store = ElasticsearchStore.connect(settings.elasticsearch_url, settings.index_prefix)
    last = ElasticsearchRunLog(store.client, settings.index_prefix).last_success("reconcile")
    store.close()
    assert last is not None and last.ended_at is not None and last.trigger == "manual"
    line = next(x for x in body.splitlines()
                if x.startswith("policy_indexer_reindex_last_success_timestamp_seconds "))
    assert float(line.split()[1]) == pytest.approx(last.ended_at.timestamp(), abs=1e-3)


def test_sigterm_stops_a_running_reconcile_between_documents_and_the_next_run_finishes(
    elasticsearch_url: str, unique: str, tmp_path: Path
) -> None:
    library = Library(tmp_path / "big.jsonl")
    for n in range(300):
        library.upsert(f"doc-{n:03d}", 1)
    library.write()
    env = {
        "PATH": "/usr/bin:/bin",
        "POLICY_INDEXER_PIPELINE": "kafka",
        "POLICY_INDEXER_ELASTICSEARCH_URL": elasticsearch_url,
        "POLICY_INDEXER_INDEX_PREFIX": unique,
        "POLICY_INDEXER_SOURCE_KIND": "changelog",
        "POLICY_INDEXER_SOURCE_PATH": str(library.path),
        "POLICY_INDEXER_LOG_LEVEL": "WARNING",
        # Every minute: at start-up the last minute's occurrence has not run, so the
        # scheduler catches it up at once (no waiting for a clock).
        "POLICY_INDEXER_REINDEX_CRON": "* * * * *",
        "POLICY_INDEXER_REINDEX_BATCH_SIZE": "1",
    }
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    runs = ElasticsearchRunLog(store.client, unique)
    try:
        with subprocess.Popen([CLI, "scheduler", "--port", "0"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True) as proc:
            try:
                def states_written() -> int:
                    assert proc.poll() is None, f"the scheduler exited {proc.returncode}"
                    counted = store.client.options(ignore_status=(404, 503)).count(
                        index=f"{unique}-document-states")
                    return int(counted.get("count", 0))

                # Mid-run: the reconcile has indexed a few of the 300 documents.
                wait_until(states_written, 60, "the scheduled reconcile to write 5 document states",
                           every_s=0.1, accept=lambda n: n >= 5)
                proc.send_signal(signal.SIGTERM)
                assert proc.wait(timeout=60) == 0
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        (record,) = runs.recent("reconcile")
        assert record.outcome == "failed" and "RunInterrupted" in (record.error or "")
        assert 0 < record.counts.get("applied_indexed", 0) < 300
        lease = store.client.get(index=f"{unique}-reindex-lease", id="reconcile")["_source"]
        assert datetime.fromisoformat(lease["expires_at"]) <= datetime.now(ZONE)  # given back

        env.pop("POLICY_INDEXER_REINDEX_BATCH_SIZE")
        rerun = subprocess.run([CLI, "reindex"], env=env, capture_output=True, text=True,
                               timeout=120, check=False)
        assert rerun.returncode == 0, rerun.stderr
        assert_index_equals(store, expected_index(library.events))
    finally:
        store.delete_everything()
        store.client.options(ignore_status=404).indices.delete(index=f"{unique}-reindex-*")
        store.close()
