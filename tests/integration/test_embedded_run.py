"""The embedded worker process beside ``replay``: replay queues, the running process indexes.

``run_embedded`` is started the way ``policy-indexer run`` will start it once
run.py dispatches the embedded mode to it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.index_equality import ExpectedIndex, assert_index_equals
from support.waiting import wait_until
from support.workers import CLI, free_port

from events.model import Action, ChangeEvent
from store.sqlite import SQLiteStore

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

START = (
    "from policy_indexer.runtime.embedded import run_embedded\n"
    "from policy_indexer.logs import configure_logging\n"
    "from policy_indexer.settings import Settings\n"
    "configure_logging('WARNING', 'json')\n"
    "run_embedded(Settings(), print)\n"
)


def events_by_outcome(port: int) -> dict[str, float]:
    """``policy_indexer_events_total`` of the worker's /metrics, by outcome."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {
        s.labels["outcome"]: s.value
        for family in text_string_to_metric_families(text) if family.name == "policy_indexer_events"
        for s in family.samples if s.name == "policy_indexer_events_total"
    }


def _exited(worker: subprocess.Popen[str]) -> str:
    if worker.poll() is None:
        return "the worker still runs"
    output = worker.stdout.read() if worker.stdout is not None else ""
    return f"the worker exited {worker.returncode}: {output[-2000:]}"


def test_replay_beside_a_running_embedded_worker_is_indexed_by_it(
    tmp_path: Path, corpora_dir: Path, basecamp_events: list[ChangeEvent],
    basecamp_expected: ExpectedIndex,
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    env.update({"POLICY_INDEXER_EMBEDDED_DIR": str(tmp_path / "data"),
                "POLICY_INDEXER_METRICS_PORT": str(port), "POLICY_INDEXER_LOG_LEVEL": "WARNING"})
    worker = subprocess.Popen([sys.executable, "-c", START], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200,
                   30, "the embedded worker's /healthz to answer 200", every_s=0.1,
                   retry_on=(httpx.TransportError,), on_timeout=lambda: _exited(worker))
        replay = subprocess.run(
            [CLI, "replay", str(corpora_dir / "basecamp-policies.jsonl")], env=env,
            capture_output=True, text=True, timeout=300, check=False,
        )
        assert replay.returncode == 0, replay.stderr
        assert "(indexed by the running policy-indexer)" in replay.stdout
        # Every change handled once, by the running worker (the series exist at 0 from
        # start-up, so their presence alone says nothing): at least one upsert per
        # document that ends indexed, never more than the log's upserts.
        events = wait_until(lambda: events_by_outcome(port), 30,
                            f"the worker's counters to add up to {len(basecamp_events)} events",
                            accept=lambda seen: sum(seen.values()) == len(basecamp_events))
        upserts = sum(e.action is Action.UPSERT for e in basecamp_events)
        assert len(basecamp_expected.chunk_ids) <= events["indexed"] <= upserts, events
        assert events["dead_lettered"] == 0, events
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert worker.returncode == 0, out
    assert "embedded mode" in out and f":{port}/metrics" in out
    store = SQLiteStore(tmp_path / "data" / "index.sqlite3")
    try:
        assert_index_equals(store, basecamp_expected)
    finally:
        store.close()
