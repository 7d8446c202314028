"""No event can crash a worker, end to end on the embedded mode (and its dead letters).

Poison events are planted in the queue file before ``policy-indexer run`` starts (as a
signed webhook or an older release would have left them): a version of 10^20, one of
2^63 (SQLite's ``OverflowError`` killed every start before), content with NUL, a
document id over the bound, front matter whose access label no store may hold. The
folder holds a good document and one with ``version: 99999999999999999999``.

The run dead-letters each planted event once, with its reason and document, lists the
bad file as unreadable, indexes the good document, and goes on; it is then killed with
SIGKILL and *not reaped* (a zombie, as under a parent that has not waited yet) and
started again, then stopped and started a third time: each start takes over, nothing
is dead-lettered twice, a later edit is indexed. ``dead-letters list|show|retry`` read
and retry them; a retried poison event comes back as the same single dead letter.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.embedded_run import EmbeddedRun, Process, clean_env
from support.waiting import wait_until
from support.workers import free_port

from transport.local_queue import LocalQueue

pytestmark = pytest.mark.slow

TOPIC = "policy.document-changes"
GOOD_DOC = """---
title: Refund policy
version: 3
changed_at: 2026-01-15T10:00:00Z
access_labels: [public]
---
## Who can ask
Riders within 30 days.
"""
POISON_FILE = GOOD_DOC.replace("version: 3", "version: 99999999999999999999")


def raw_event(document_id: str, version: int, content: str | None = "## A\nText.\n",
              **extra: Any) -> bytes:
    """An event as bytes, validated by nobody (the way an old webhook let it through)."""
    body: dict[str, Any] = {
        "schema_version": 1, "event_id": f"planted-{document_id}", "document_id": document_id,
        "action": "upsert", "version": version, "changed_at": "2026-01-15T10:00:00+00:00",
        "content_type": "text/markdown", "content": content, **extra,
    }
    return json.dumps(body).encode()


LONG_LABEL = "L" * 300
PLANTED: list[tuple[str, bytes, str]] = [  # (key, value, reason expected)
    ("huge-version", raw_event("huge-version", 99999999999999999999), "schema"),
    ("webhook-2-63", raw_event("webhook-2-63", 2**63), "schema"),
    ("nul-content", raw_event("nul-content", 1, "## A\nbad\x00byte\n"), "schema"),
    ("i" * 600, raw_event("i" * 600, 1), "schema"),
    ("long-label", raw_event("long-label", 1, f"---\naccess_labels: [{LONG_LABEL}]\n---\n## A\n"),
     "limits"),
    ("planted-good", raw_event("planted-good", 1), ""),
]


@dataclass
class Embedded(EmbeddedRun):
    def wait_drained(self, run: Process) -> dict[str, Any]:
        def drained() -> dict[str, Any]:
            assert run.popen.poll() is None, f"run exited {run.popen.returncode}: {run.output}"
            return self.status()
        return wait_until(drained, 60, "the queue to drain and the good documents indexed",
                          every_s=0.2, accept=lambda s: s["queued"] == 0 and _indexed(s),
                          on_timeout=lambda: run.output[-3000:])


def _indexed(status: dict[str, Any]) -> bool:
    docs = {d["document_id"]: d for d in status["documents"]}
    return bool(docs.get("refunds", {}).get("status") == "current")


@pytest.fixture
def embedded(tmp_path: Path) -> Embedded:
    root = tmp_path / "library"
    root.mkdir()
    (root / "refunds.md").write_text(GOOD_DOC)
    (root / "poison.md").write_text(POISON_FILE)
    data = tmp_path / "data"
    queue = LocalQueue(data / "queue.sqlite3")
    queue.append(TOPIC, [(key.encode(), value) for key, value, _ in PLANTED])
    queue.close()
    port = free_port()
    env = clean_env(embedded_dir=str(data), source_kind="folder", source_path=str(root),
                    metrics_port=str(port), search_encoder="none", log_level="WARNING",
                    watch_rescan_seconds="0.5")
    return Embedded(root, data, env, port, tmp_path)


def test_poison_events_are_dead_lettered_once_and_the_worker_survives_two_restarts(
    embedded: Embedded,
) -> None:
    expected = sorted((key, reason) for key, _, reason in PLANTED if reason)
    runs: list[Process] = []
    try:
        first = embedded.start()
        runs.append(first)
        embedded.wait_healthy(first)
        status = embedded.wait_drained(first)
        docs = {d["document_id"]: d for d in status["documents"]}
        assert docs["poison"]["status"] == "unreadable", docs["poison"]
        assert "99999999999999999999" in docs["poison"]["reason"], docs["poison"]
        letters = embedded.letters()
        assert sorted((d["document_id"], d["reason"]) for d in letters) == expected
        for letter in letters:  # the reason names the document (the id's head, for the long one)
            assert letter["document_id"][:40] in letter["error"], letter

        first.popen.send_signal(signal.SIGKILL)  # not waited for: a zombie holds the lease row
        wait_until(lambda: Path(f"/proc/{first.popen.pid}/stat").read_text()
                   .rpartition(")")[2].split()[0], 10, "the killed run to be a zombie",
                   accept=lambda state: state == "Z")
        second = embedded.start()
        runs.append(second)
        embedded.wait_healthy(second)
        embedded.wait_drained(second)
        assert sorted((d["document_id"], d["reason"]) for d in embedded.letters()) == expected
        second.popen.send_signal(signal.SIGTERM)
        assert second.popen.wait(30) == 0, second.output[-3000:]

        third = embedded.start()
        runs.append(third)
        embedded.wait_healthy(third)
        embedded.wait_drained(third)
        letters = embedded.letters()
        assert sorted((d["document_id"], d["reason"]) for d in letters) == expected

        webhook = next(d for d in letters if d["document_id"] == "webhook-2-63")
        shown = embedded.cli("dead-letters", "show", webhook["id"])
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["value"] == raw_event("webhook-2-63", 2**63).decode()
        missing = embedded.cli("dead-letters", "show", "999999")
        assert missing.returncode == 2 and "999999" in missing.stderr, missing.stderr
        retried = embedded.cli("dead-letters", "retry", webhook["id"])
        assert retried.stdout.strip() == "retried 1 dead letters", retried.stdout + retried.stderr
        # Still poison: back as one dead letter (a new id), never two.
        wait_until(embedded.letters, 30, "the retried poison event to be dead-lettered again",
                   accept=lambda found: sorted((d["document_id"], d["reason"]) for d in found)
                   == expected and webhook["id"] not in {d["id"] for d in found})

        refunds = embedded.root / "refunds.md"
        refunds.write_text(GOOD_DOC.replace("version: 3", "version: 4") + "## Later\nEdit.\n")
        wait_until(embedded.status, 30, "a later edit to be indexed",
                   accept=lambda s: {d["document_id"]: d for d in s["documents"]}["refunds"]
                   ["indexed_version"] == 4, on_timeout=lambda: third.output[-3000:])
        assert third.popen.poll() is None, third.output[-3000:]
    finally:
        for run in runs:
            if run.popen.poll() is None:
                run.popen.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    run.popen.wait(30)
            run.close()
