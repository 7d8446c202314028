"""Versions at the top of the range and two changes at one version, end to end on the
embedded mode (``policy-indexer run``).

- Two Sanity edits of one document stamped in the same second (Sanity's ``_updatedAt``
  has whole seconds): both 202, and the index ends with the second text, not the first
  (it used to keep the first: the second was dropped as a duplicate, unseen).
- A webhook document at the largest version a source may stamp is edited again at that
  version (the new text is served) and deleted at it (gone from the index); one version
  above is refused 422 at the door instead of accepted and frozen.
- A folder file at that largest version edited in place is indexed again (the watcher's
  version goes one into the pipeline's headroom), and ``status`` no longer says
  ``current`` while the old text is served; a file at 2^53 - 1 is listed unreadable.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.embedded_run import EmbeddedRun, Process, clean_env
from support.waiting import wait_until
from support.webhook_helpers import encode, payload, signed_headers
from support.workers import free_port

from events.model import MAX_SOURCE_VERSION, MAX_VERSION
from webhooks.adapters import sanity

pytestmark = pytest.mark.slow

SECRET = b"ties-test-webhook-secret-00001"
SANITY_SECRET = "ties-test-sanity-secret-000001"
TOP = MAX_SOURCE_VERSION


def front(version: int, text: str) -> str:
    return f"---\ntitle: Refunds\nversion: {version}\n---\n## Refunds\n{text}\n"


@dataclass
class Run(EmbeddedRun):
    webhook_port: int
    process: Process | None = None

    def live_texts(self, document_id: str) -> list[str]:
        """The text of each chunk the search serves for the document (its current version)."""
        with contextlib.closing(sqlite3.connect(
                f"file:{self.data / 'index.sqlite3'}?mode=ro", uri=True)) as db:
            rows = db.execute(
                "SELECT c.body FROM chunks AS c JOIN document_states AS s ON s.document_id = "
                "c.document_id AND s.version = c.version AND s.deleted = 0 "
                "WHERE c.document_id = ? ORDER BY c.chunk_id", (document_id,)).fetchall()
        return [json.loads(body)["text"] for (body,) in rows]

    def wait_texts(self, document_id: str, what: str, accept: Any) -> list[str]:
        def probe() -> list[str]:
            assert self.process is not None and self.process.popen.poll() is None, (
                self.process.output[-3000:] if self.process else "")
            return self.live_texts(document_id)
        found: list[str] = wait_until(
            probe, 60, what, every_s=0.1, accept=accept, retry_on=(sqlite3.OperationalError,),
            on_timeout=lambda: self.process.output[-3000:] if self.process else "")
        return found

    def sanity(self, document_id: str, updated: str, body: str) -> httpx.Response:
        raw = json.dumps({"_id": document_id, "_type": "policy", "_rev": "r" + updated[-6:],
                          "_updatedAt": updated, "title": "Deliveries", "body": body}).encode()
        t_ms = int(time.time() * 1000)
        return httpx.post(f"http://127.0.0.1:{self.webhook_port}/webhooks/sanity", content=raw,
                          headers={"Content-Type": "application/json",
                                   "sanity-operation": "update",
                                   "sanity-webhook-signature": sanity.sign(SANITY_SECRET, t_ms,
                                                                           raw)}, timeout=10)

    def cms(self, event_type: str, document_id: str, version: int,
            content: str | None = None) -> httpx.Response:
        fields: dict[str, Any] = {"id": document_id, "version": version}
        if content is not None:
            fields["content"] = content
        body = encode(payload(event_type, **fields))
        return httpx.post(f"http://127.0.0.1:{self.webhook_port}/webhooks/cms", content=body,
                          headers=signed_headers(body, (SECRET,), at=time.time()), timeout=10)

    def documents(self) -> dict[str, dict[str, Any]]:
        return {d["document_id"]: d for d in self.status()["documents"]}


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    root = tmp_path / "library"
    root.mkdir()
    (root / "refunds.md").write_text(front(TOP, "Within 30 days."))
    (root / "frozen.md").write_text(front(MAX_VERSION, "Never indexed."))
    port, webhook_port = free_port(), free_port()
    env = clean_env(embedded_dir=str(tmp_path / "data"), source_kind="folder",
                    source_path=str(root), metrics_port=str(port),
                    webhook_port=str(webhook_port), webhook_secrets=json.dumps([SECRET.decode()]),
                    webhook_sanity_secrets=json.dumps([SANITY_SECRET]),
                    search_encoder="none", log_level="WARNING", watch_rescan_seconds="0.5",
                    commit_every_seconds="0.2")
    embedded = Run(root, tmp_path / "data", env, port, tmp_path, webhook_port)
    embedded.process = embedded.start()
    try:
        embedded.wait_healthy(embedded.process)
        yield embedded
    finally:
        process = embedded.process
        if process.popen.poll() is None:
            process.popen.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.popen.wait(30)
        process.close()


def test_two_sanity_edits_in_one_second_end_with_the_second_text(run: Run) -> None:
    first = run.sanity("policy-deliveries", "2026-11-29T18:04:05Z",
                       "# Deliveries\n\nOrders ship in two days.")
    assert first.status_code == 202, first.text
    run.wait_texts("policy-deliveries", "the first edit to be indexed",
                   lambda texts: any("two days" in t for t in texts))
    second = run.sanity("policy-deliveries", "2026-11-29T18:04:05Z",
                        "# Deliveries\n\nOrders ship in five days.")
    assert second.status_code == 202, second.text
    assert first.json()["events"] == second.json()["events"] == 1
    texts = run.wait_texts("policy-deliveries", "the second edit to replace the first",
                           lambda texts: any("five days" in t for t in texts)
                           and not any("two days" in t for t in texts))
    assert texts and all("five days" in t for t in texts), texts
    families = httpx.get(f"http://127.0.0.1:{run.port}/metrics", timeout=5).text
    assert "policy_indexer_version_ties_total 1.0" in families


def test_a_webhook_document_at_the_top_version_can_be_edited_and_deleted(run: Run) -> None:
    assert run.cms("document.published", "cms/top", TOP, "# Top\n\nFirst text.").status_code \
        == 202
    run.wait_texts("cms/top", "the first text", lambda t: any("First text" in x for x in t))
    assert run.cms("document.updated", "cms/top", TOP, "# Top\n\nSecond text.").status_code \
        == 202
    # The tie's new chunks are written before the replaced ones are deleted (indexing.core):
    # wait for the replacement to finish, not for its first half.
    texts = run.wait_texts("cms/top", "the edit at the same version to replace the first text",
                           lambda t: any("Second text" in x for x in t)
                           and not any("First text" in x for x in t))
    assert texts and all("Second text" in x for x in texts), texts

    above = run.cms("document.updated", "cms/top", TOP + 1, "# Top\n\nThird text.")
    assert above.status_code == 422, above.text
    assert [e["loc"] for e in above.json()["errors"]] == [["document", "version"]]

    assert run.cms("document.deleted", "cms/top", TOP).status_code == 202
    run.wait_texts("cms/top", "the delete at the same version", lambda t: t == [])
    state = run.documents().get("cms/top")
    assert state is None or state.get("status") != "current", state


def test_a_folder_file_at_the_top_version_follows_its_edits(run: Run) -> None:
    run.wait_texts("refunds", "the folder's refunds", lambda t: any("30 days" in x for x in t))
    frozen = run.documents()["frozen"]
    assert frozen["status"] == "unreadable", frozen
    (run.root / "refunds.md").write_text(front(TOP, "Within 60 days."))
    texts = run.wait_texts("refunds", "the edit of a file at the top version",
                           lambda t: any("60 days" in x for x in t))
    assert not any("30 days" in x for x in texts)
    refunds = run.documents()["refunds"]
    assert refunds["indexed_version"] == TOP + 1, refunds
    assert refunds["status"] == "current", refunds
