"""``policy-indexer replay`` on the embedded mode: the index ends equal to the library.

No services: the SQLite store and the local queue live in the test's tmp dir.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from support.faulty_cli import FAULT_ENV
from support.faulty_cli import command as faulty_command
from support.index_equality import ExpectedIndex, assert_index_equals
from support.waiting import wait_until
from support.workers import CLI

from events.model import ChangeEvent
from metrics.definitions import WorkerMetrics
from policy_indexer.runtime.backends import EmbeddedBackends
from policy_indexer.settings import Settings
from store.sqlite import SQLiteStore
from transport.local_queue import LocalQueue

pytestmark = [pytest.mark.corpus, pytest.mark.slow]


def replay(data: Path, changelog: Path, *args: str, kill_at: str | None = None,
           **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    clean.update({
        "POLICY_INDEXER_EMBEDDED_DIR": str(data),
        "POLICY_INDEXER_LOG_LEVEL": "WARNING",
        "POLICY_INDEXER_COMMIT_EVERY_RECORDS": "20",
        "POLICY_INDEXER_REPLAY_BATCH_RECORDS": "20",
        **{f"POLICY_INDEXER_{k.upper()}": v for k, v in env.items()},
        **({FAULT_ENV: kill_at} if kill_at else {}),
    })
    return subprocess.run(faulty_command("replay", str(changelog), *args), env=clean,
                          capture_output=True, text=True, timeout=300, check=False)


def assert_embedded_equals(data: Path, expected: ExpectedIndex) -> None:
    store = SQLiteStore(data / "index.sqlite3")
    queue = LocalQueue(data / "queue.sqlite3")
    try:
        assert_index_equals(store, expected)
        assert queue.pending("policy.document-changes") == 0
        assert queue.dead_letters("policy.document-changes") == []
    finally:
        store.close()
        queue.close()


def test_basecamp_replayed_into_the_embedded_mode_equals_the_library(
    tmp_path: Path, corpora_dir: Path, basecamp_expected: ExpectedIndex
) -> None:
    done = replay(tmp_path / "data", corpora_dir / "basecamp-policies.jsonl")
    assert done.returncode == 0, done.stderr
    assert "replayed 362 changes" in done.stdout
    assert "26 documents" in done.stdout and "0 dead letters" in done.stdout
    assert "index: 100%" in done.stderr  # the progress bar
    assert_embedded_equals(tmp_path / "data", basecamp_expected)


# Checkpoints are per polled batch (20 changes here, about 19 batches in all).
@pytest.mark.parametrize("kill_at", ["after-chunk-write:2", "after-state-write:7",
                                     "after-delete-step:15", "after-commit:3"])
def test_sigkill_during_a_replay_then_the_same_command_again_gives_the_same_index(
    tmp_path: Path, corpora_dir: Path, basecamp_expected: ExpectedIndex, kill_at: str
) -> None:
    log = corpora_dir / "basecamp-policies.jsonl"
    killed = replay(tmp_path / "data", log, kill_at=kill_at)
    assert killed.returncode == -9, killed.stderr
    again = replay(tmp_path / "data", log)
    assert again.returncode == 0, again.stderr
    assert_embedded_equals(tmp_path / "data", basecamp_expected)


def test_a_bad_line_names_itself_and_the_changes_before_it_are_indexed(
    tmp_path: Path, corpora_dir: Path
) -> None:
    lines = (corpora_dir / "basecamp-policies.jsonl").read_text().splitlines()[:30]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:10], json.dumps({"seq": 11, "action": "upsert"}),
                              *lines[11:]]) + "\n")
    done = replay(tmp_path / "data", bad)
    assert done.returncode == 1
    assert "bad.jsonl:11: not a valid change" in done.stderr
    assert "10 changes before it were queued and indexed" in done.stderr
    store = SQLiteStore(tmp_path / "data" / "index.sqlite3")
    try:
        assert {s.document_id for s in store.iter_states()} == {
            json.loads(line)["document_id"] for line in lines[:10]
        }
    finally:
        store.close()


def test_kafka_only_options_are_refused_in_embedded_mode(tmp_path: Path) -> None:
    log = tmp_path / "empty.jsonl"
    log.write_text("")
    done = replay(tmp_path / "data", log, "--rate", "5")
    assert done.returncode == 2
    assert "--topic and --rate apply to --to kafka only" in done.stderr


def test_every_event_twice_and_out_of_order_gives_the_same_state(
    tmp_path: Path, basecamp_events: list[ChangeEvent], basecamp_expected: ExpectedIndex
) -> None:
    stream = basecamp_events * 2
    random.Random(8).shuffle(stream)  # one document's changes may arrive out of version order
    embedded = EmbeddedBackends.open(Settings(embedded_dir=tmp_path / "data"))
    try:
        embedded.publisher().publish_many(stream)
        worker = embedded.start_worker(WorkerMetrics.create(CollectorRegistry()))
        def pending() -> int:
            assert worker.alive(), worker.error
            return embedded.queue.pending(embedded.topic)

        wait_until(pending, 120, "the worker to drain the queue", every_s=0.1,
                   accept=lambda n: n == 0)
        worker.stop()
        assert_index_equals(embedded.store, basecamp_expected)
        assert embedded.queue.dead_letters(embedded.topic) == []
    finally:
        embedded.close()


def test_sigkill_from_outside_mid_replay_then_again_gives_the_same_index(
    tmp_path: Path, corpora_dir: Path, basecamp_expected: ExpectedIndex
) -> None:
    data, log = tmp_path / "data", corpora_dir / "basecamp-policies.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    env.update({"POLICY_INDEXER_EMBEDDED_DIR": str(data), "POLICY_INDEXER_LOG_LEVEL": "WARNING",
                "POLICY_INDEXER_COMMIT_EVERY_RECORDS": "5",
                "POLICY_INDEXER_REPLAY_BATCH_RECORDS": "5"})
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as err:
        proc = subprocess.Popen([CLI, "replay", str(log)], env=env, stdout=subprocess.DEVNULL,
                                stderr=err)

    def queued() -> int | None:
        assert proc.poll() is None, f"the replay ended first: {errors.read_text()[-2000:]}"
        if not (data / "queue.sqlite3").exists():
            return None
        with contextlib.closing(sqlite3.connect(data / "queue.sqlite3")) as conn:
            left: int = conn.execute("SELECT count(*) FROM queue_records").fetchone()[0]
        return left

    try:
        wait_until(queued, 60, "the replay's queue to be down to 1-300 records", every_s=0.02,
                   accept=lambda left: left is not None and 0 < left <= 300,
                   retry_on=(sqlite3.OperationalError,))  # the table is not created yet
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -9, errors.read_text()[-2000:]
    again = replay(data, log)
    assert again.returncode == 0, again.stderr
    assert_embedded_equals(data, basecamp_expected)
