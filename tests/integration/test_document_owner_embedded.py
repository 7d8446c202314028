"""One owner per document, end to end on the embedded mode.

``policy-indexer run`` with a folder source *and* a webhook secret, as the issue's
report had it. A signed webhook for a folder document with a huge version is refused
409 and the folder's content stays; a document that came only through the webhook is
``other_owner`` in ``status`` (never ``deleted_at_source``), its lag is not counted by
``monitor --once``, and ``reindex --dry-run`` plans no deletion; an event from another
owner planted in the queue is a dead letter ``owner`` naming the document and both
owners. Then the run is stopped, its index file is made what schema 2 left (no
``document_states.owner``), and a new run opens it, keeps working and adopts the
documents for the folder.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.embedded_run import EmbeddedRun, Process, clean_env
from support.waiting import wait_until
from support.webhook_helpers import encode, payload, signed_headers
from support.workers import free_port

from transport.local_queue import LocalQueue

pytestmark = pytest.mark.slow

TOPIC = "policy.document-changes"
SECRET = b"owner-test-webhook-secret-0001"
REFUNDS = """---
title: Refund policy
version: 3
changed_at: 2026-01-15T10:00:00Z
---
## Who can ask
Riders within 30 days.

## How
Through the app.
"""


@dataclass
class Embedded(EmbeddedRun):
    webhook_port: int

    def documents(self) -> dict[str, dict[str, Any]]:
        return {d["document_id"]: d for d in self.status()["documents"]}

    def letters(self) -> list[dict[str, Any]]:
        done = self.cli("dead-letters", "list", "--json")
        assert done.returncode == 0, done.stderr[-2000:]
        return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]

    def webhook(self, document_id: str, version: int) -> httpx.Response:
        body = encode(payload("document.published", id=document_id, version=version,
                              content="# Hijack\n\nOne chunk from the CMS.\n"))
        return httpx.post(f"http://127.0.0.1:{self.webhook_port}/webhooks/cms", content=body,
                          headers=signed_headers(body, (SECRET,), at=time.time()), timeout=10)

    def start(self) -> Process:
        run = super().start()
        self.wait_healthy(run)
        return run

    def wait_for(self, run: Process, what: str, accept: Any) -> dict[str, dict[str, Any]]:
        def docs() -> dict[str, dict[str, Any]]:
            assert run.popen.poll() is None, f"run exited {run.popen.returncode}: {run.output}"
            return self.documents()
        found: dict[str, dict[str, Any]] = wait_until(
            docs, 60, what, every_s=0.2, accept=accept, on_timeout=lambda: run.output[-3000:])
        return found


@pytest.fixture
def embedded(tmp_path: Path) -> Embedded:
    root = tmp_path / "library"
    root.mkdir()
    (root / "refunds.md").write_text(REFUNDS)
    port, webhook_port = free_port(), free_port()
    env = clean_env(embedded_dir=str(tmp_path / "data"), source_kind="folder",
                    source_path=str(root), metrics_port=str(port),
                    webhook_port=str(webhook_port), webhook_secrets=json.dumps([SECRET.decode()]),
                    search_encoder="none", log_level="WARNING", watch_rescan_seconds="0.5")
    return Embedded(root, tmp_path / "data", env, port, tmp_path, webhook_port)


def stop(run: Process) -> None:
    if run.popen.poll() is None:
        run.popen.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            run.popen.wait(30)
    run.close()


def test_the_webhook_cannot_take_a_folder_document_and_its_own_are_not_deleted(
    embedded: Embedded,
) -> None:
    runs: list[Process] = []
    try:
        run = embedded.start()
        runs.append(run)
        docs = embedded.wait_for(run, "the folder's refunds to be indexed",
                                 lambda d: d.get("refunds", {}).get("status") == "current")
        folder_refunds = docs["refunds"]
        assert (folder_refunds["indexed_version"], folder_refunds["owner"]) == (3, "folder")

        # 1. a signed webhook for the folder's document: 409, nothing changes
        refused = embedded.webhook("refunds", 2**52)
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"] == "owner_conflict"
        assert "'folder'" in refused.json()["detail"] and "'cms'" in refused.json()["detail"]

        # 2. a document that only the CMS has: accepted, owned by the CMS
        accepted = embedded.webhook("cms-only", 7)
        assert accepted.status_code == 202, accepted.text
        docs = embedded.wait_for(run, "the webhook's document to be indexed",
                                 lambda d: d.get("cms-only", {}).get("indexed_version") == 7)
        cms_only = docs["cms-only"]
        assert cms_only["status"] == "other_owner", cms_only
        assert (cms_only["owner"], cms_only["deleted_at_source"], cms_only["lag_seconds"]) == (
            "cms", False, None)
        assert docs["refunds"] == {**folder_refunds, "lag_seconds": docs["refunds"]["lag_seconds"]}
        assert docs["refunds"]["lag_seconds"] == 0
        assert embedded.status()["behind"] == 0

        monitored = embedded.cli("monitor", "--once")
        assert monitored.returncode == 0, monitored.stderr[-2000:]
        assert "indexed documents: 2" in monitored.stdout, monitored.stdout
        behind = next(line for line in monitored.stdout.splitlines() if line.startswith("behind"))
        assert behind.split()[1] == "0", monitored.stdout
        assert "cms-only" not in monitored.stdout, monitored.stdout

        planned = embedded.cli("reindex", "--dry-run")
        assert planned.returncode == 0, planned.stdout + planned.stderr
        assert "reason other_owner: 1" in planned.stdout, planned.stdout
        assert "delete" not in planned.stdout.replace("max_delete", ""), planned.stdout

        # 3. an event from another owner already in the queue: dead letter "owner"
        planted = json.dumps({
            "schema_version": 1, "event_id": "planted-cms-refunds", "document_id": "refunds",
            "action": "upsert", "version": 99, "changed_at": "2026-02-01T00:00:00+00:00",
            "content_type": "text/markdown", "content": "# Hijack\n", "source": "contentful",
        }).encode()
        queue = LocalQueue(embedded.data / "queue.sqlite3")
        queue.append(TOPIC, [(b"refunds", planted)])
        queue.close()
        letters = wait_until(embedded.letters, 30, "the planted event to be dead-lettered",
                             accept=lambda found: len(found) == 1,
                             on_timeout=lambda: run.output[-3000:])
        (letter,) = letters
        assert (letter["document_id"], letter["reason"]) == ("refunds", "owner"), letter
        for name in ("'refunds'", "'folder'", "'contentful'"):
            assert name in letter["error"], letter
        after = embedded.documents()["refunds"]
        assert (after["indexed_version"], after["chunks"], after["owner"]) == (
            3, folder_refunds["chunks"], "folder")
        stop(run)
        assert run.popen.returncode == 0, run.output[-3000:]

        # 4. the index file as schema 2 left it: no owner column; a new run opens it
        index = embedded.data / "index.sqlite3"
        conn = sqlite3.connect(index)
        conn.executescript("ALTER TABLE document_states DROP COLUMN owner;"
                           "UPDATE store_meta SET value = '2' WHERE key = 'schema_version';")
        conn.close()
        again = embedded.start()
        runs.append(again)
        (embedded.root / "refunds.md").write_text(REFUNDS.replace("version: 3", "version: 4"))
        docs = embedded.wait_for(again, "an edit to be indexed into the upgraded file",
                                 lambda d: d.get("refunds", {}).get("indexed_version") == 4)
        assert (docs["refunds"]["status"], docs["refunds"]["owner"]) == ("current", "folder")
        assert docs["cms-only"]["owner"] is None  # unowned after the downgrade: compared again
        assert embedded.webhook("refunds", 2**52).status_code == 409  # the folder holds it
    finally:
        for started in runs:
            stop(started)
