"""Content the worker refuses, end to end on the embedded mode.

The folder holds a good document and documents whose front matter the chunker refuses
(a date that is no date, a null label, a singular ``access_label``). ``policy-indexer
run`` dead-letters each; ``status`` shows each as ``refused`` with the dead letter's
reason (naming the key), without lag and not counted behind, the monitor's gauges
count no lag for them; a public search never
returns them; ``reindex`` lists them as refused and exits 0, run after run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.embedded_run import EmbeddedRun, clean_env
from support.waiting import wait_until
from support.workers import free_port

pytestmark = pytest.mark.slow

GOOD = """---
title: Refund policy
version: 3
changed_at: 2026-01-15T10:00:00Z
access_labels: [public]
---
## Who can ask
Riders within 30 days.
"""
BAD = {  # document id: (front matter line, the key its reason names)
    "banana": ('valid_to: "banana"', "valid_to"),
    "null-label": ("access_labels: [null]", "access_labels"),
    "singular": ("access_label: [staff]", "access_label"),
}


def _file(line: str) -> str:
    return (f"---\ntitle: Lockers\nversion: 2\nchanged_at: 2026-01-15T10:00:00Z\n{line}\n---\n"
            "## Lockers\nThe word zebrafinch is only in refused documents.\n")


@pytest.fixture
def embedded(tmp_path: Path) -> EmbeddedRun:
    root = tmp_path / "library"
    root.mkdir()
    (root / "refunds.md").write_text(GOOD)
    for document_id, (line, _key) in BAD.items():
        (root / f"{document_id}.md").write_text(_file(line))
    port = free_port()
    env = clean_env(embedded_dir=str(tmp_path / "data"), source_kind="folder",
                    source_path=str(root), metrics_port=str(port), search_encoder="none",
                    log_level="WARNING", watch_rescan_seconds="0.5",
                    monitor_interval_seconds="0.5")
    return EmbeddedRun(root, tmp_path / "data", env, port, tmp_path)


def test_a_refused_document_has_its_reason_in_status_and_no_lag(embedded: EmbeddedRun) -> None:
    run = embedded.start()
    try:
        embedded.wait_healthy(run)

        def settled() -> dict[str, Any]:
            assert run.popen.poll() is None, run.output[-3000:]
            return embedded.status()
        status = wait_until(
            settled, 60, "every document current or refused", every_s=0.2,
            accept=lambda s: s["queued"] == 0 and sorted(
                d["status"] for d in s["documents"]) == ["current"] + ["refused"] * len(BAD),
            on_timeout=lambda: run.output[-3000:])
        docs = {d["document_id"]: d for d in status["documents"]}
        for document_id, (_line, key) in BAD.items():
            doc = docs[document_id]
            assert doc["lag_seconds"] is None and doc["indexed_version"] is None, doc
            assert doc["reason"].startswith("chunker:") and repr(key) in doc["reason"], doc
        assert status["behind"] == 0 and status["max_lag_seconds"] == 0, status
        assert sorted(d["document_id"] for d in embedded.letters()) == sorted(BAD)

        found = embedded.cli("search", "zebrafinch lockers", "--labels", "public", "--json")
        assert found.returncode in (0, 1), found.stderr[-2000:]
        assert not any(doc in found.stdout for doc in ('"banana"', '"null-label"',
                                                       '"singular"')), found.stdout
        json.loads(found.stdout)  # an answer, not an error

        def gauges() -> dict[str, float]:
            text = httpx.get(f"http://127.0.0.1:{embedded.port}/metrics", timeout=5).text
            return {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
                    if line.startswith("policy_indexer_max_lag_seconds ")}
        # the monitor: not lagging, a second cycle later still not (the lag does not grow)
        for _ in range(2):
            wait_until(gauges, 30, "the monitor to measure no lag", every_s=0.3,
                       retry_on=(httpx.HTTPError,),
                       accept=lambda g: g == {"policy_indexer_max_lag_seconds": 0.0},
                       on_timeout=lambda: str(gauges()))

        for _ in range(2):  # every run, not only the first
            reindexed = embedded.cli("reindex")
            assert reindexed.returncode == 0, reindexed.stdout + reindexed.stderr[-2000:]
            for document_id, (_line, key) in BAD.items():
                assert f"refused document {document_id}: chunker:" in reindexed.stdout
                assert repr(key) in reindexed.stdout
            assert "outcome: success" in reindexed.stdout
    finally:
        run.close()
