"""The embedded worker process beside ``replay``: replay queues, the running process indexes.

``run_embedded`` is started the way ``policy-indexer run`` will start it once
run.py dispatches the embedded mode to it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from support.index_equality import ExpectedIndex, assert_index_equals
from support.workers import CLI, free_port

from store.sqlite import SQLiteStore

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

START = (
    "from policy_indexer.embedded_run import run_embedded\n"
    "from policy_indexer.logs import configure_logging\n"
    "from policy_indexer.settings import Settings\n"
    "configure_logging('WARNING', 'json')\n"
    "run_embedded(Settings())\n"
)


def test_replay_beside_a_running_embedded_worker_is_indexed_by_it(
    tmp_path: Path, corpora_dir: Path, basecamp_expected: ExpectedIndex
) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    env.update({"POLICY_INDEXER_EMBEDDED_DIR": str(tmp_path / "data"),
                "POLICY_INDEXER_METRICS_PORT": str(port), "POLICY_INDEXER_LOG_LEVEL": "WARNING"})
    worker = subprocess.Popen([sys.executable, "-c", START], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        replay = subprocess.run(
            [CLI, "replay", str(corpora_dir / "basecamp-policies.jsonl")], env=env,
            capture_output=True, text=True, timeout=300, check=False,
        )
        assert replay.returncode == 0, replay.stderr
        assert "(indexed by the running policy-indexer)" in replay.stdout
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics").text
        assert 'policy_indexer_events_total{outcome="indexed"}' in metrics
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
