"""``policy-indexer run`` in the embedded mode: the whole pipeline in one process.

The command is started as a user starts it, on a copy of the sample library,
with a webhook secret: it indexes the library (``status --json``: every
document at the folder's version, lag 0), serves every part's metrics on one
``/metrics``, follows a file edit and a signed webhook within two seconds, and
stops cleanly (exit 0) on SIGTERM.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.embedded_run import (
    Process,
    assert_library_indexed,
    clean_env,
    start_run,
    status_json,
    within,
)
from support.webhook_helpers import encode, payload, signed_headers
from support.workers import CLI, free_port

from store.sqlite import SQLiteStore

pytestmark = pytest.mark.slow  # starts `policy-indexer run` (a process)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "library"
SECRET = "whsec_all_in_one_test_000001"
FOLLOW_S = 2.0  # the bound for the index to follow a change


def metric_families(port: int) -> dict[str, dict[tuple[str | tuple[str, str], ...], float]]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {
        family.name: {
            (s.name, *sorted(s.labels.items())): s.value for s in family.samples
        }
        for family in text_string_to_metric_families(text)
    }


def stop(process: Process, timeout_s: float = 30) -> int:
    process.popen.send_signal(signal.SIGTERM)
    try:
        return process.popen.wait(timeout_s)
    except subprocess.TimeoutExpired:
        process.popen.kill()
        process.popen.wait()
        raise AssertionError(f"no clean stop within {timeout_s} s:\n{process.output}") from None


@dataclass
class AllInOne:
    cwd: Path
    library: Path
    env: dict[str, str]
    metrics_port: int
    webhook_port: int
    process: Process

    def store(self) -> SQLiteStore:
        return SQLiteStore(self.cwd / ".policy-indexer" / "index.sqlite3")


@pytest.fixture
def all_in_one(tmp_path: Path) -> Iterator[AllInOne]:
    library = tmp_path / "library"
    shutil.copytree(EXAMPLES, library)
    metrics_port, webhook_port = free_port(), free_port()
    env = clean_env(source_kind="folder", source_path="library",
                    metrics_port=str(metrics_port), webhook_port=str(webhook_port),
                    webhook_secrets=json.dumps([SECRET]), monitor_interval_seconds="0.5",
                    commit_every_seconds="0.2")
    process = start_run(tmp_path, env, [CLI, "run"])
    try:
        yield AllInOne(tmp_path, library, env, metrics_port, webhook_port, process)
    finally:
        process.close()


def test_run_indexes_the_library_serves_all_metrics_follows_edits_and_stops_on_sigterm(
    all_in_one: AllInOne,
) -> None:
    run = all_in_one
    within(60, lambda: run.process.said("indexed: 8 documents"), "first indexing")
    # the banner follows the parts' start (the encoders load first): the two are not ordered
    within(60, lambda: run.process.said("embedded mode"), "the start banner")
    banner = run.process.output
    assert "embedded mode" in banner and f":{run.metrics_port}/metrics" in banner
    assert f":{run.webhook_port}/webhooks/cms" in banner and "watching:  library" in banner
    assert_library_indexed(status_json(run.cwd, run.env), run.library)

    assert httpx.get(f"http://127.0.0.1:{run.metrics_port}/healthz").status_code == 200
    families = metric_families(run.metrics_port)
    for name in ("policy_indexer_events",                 # the worker
                 "policy_indexer_max_lag_seconds",          # the freshness monitor
                 "policy_indexer_reindex_last_outcome",   # the scheduler
                 "policy_indexer_webhook_requests"):      # the webhook receiver
        assert name in families, sorted(families)
    assert families["policy_indexer_events"][
        ("policy_indexer_events_total", ("outcome", "indexed"))] >= 8

    store = run.store()
    try:
        policy = run.library / "refunds" / "index.md"
        policy.write_text(policy.read_text().replace("60 days", "90 days (zeppelinrule)"))
        within(FOLLOW_S, lambda: any(h.chunk.document_id == "refunds" for h in store.search(
            "zeppelinrule", access_labels=["public"])), "the edit in the index")

        body = encode(payload(id="notes/by-webhook", version=1, path="notes/by-webhook.md",
                              content="## Note\n\nA quokkaferry rule.\n",
                              metadata={"access_labels": ["public"]}))
        answer = httpx.post(f"http://127.0.0.1:{run.webhook_port}/webhooks/cms", content=body,
                            headers=signed_headers(body, (SECRET.encode(),), at=time.time()))
        assert answer.status_code == 202, answer.text
        within(FOLLOW_S, lambda: any(h.chunk.document_id == "notes/by-webhook" for h in
               store.search("quokkaferry", access_labels=["public"])), "the webhook's change")
    finally:
        store.close()

    assert stop(run.process) == 0, run.process.output
    assert run.process.said('"event": "stopped"'), run.process.output


def test_run_with_no_configuration_says_which_parts_are_off_and_how_to_turn_them_on(
    tmp_path: Path,
) -> None:
    port = free_port()
    process = start_run(tmp_path, clean_env(metrics_port=str(port)), [CLI, "run"])
    try:
        within(30, lambda: process.said("stop: Ctrl-C") or process.popen.poll() is not None,
               "the start lines")
        assert process.popen.poll() is None, process.output
        for part in ("webhook:   off (no POLICY_INDEXER_WEBHOOK_SECRETS",
                     "watching:  off (no source: set POLICY_INDEXER_SOURCE_KIND=folder",
                     "monitor:   off", "scheduler: off"):
            assert part in process.output, process.output
        assert (tmp_path / ".policy-indexer" / "queue.sqlite3").exists()
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
        assert stop(process) == 0, process.output
    finally:
        process.close()
