"""Kill -9 during heavy editing, end to end: the versions stay the files'.

A library of generated documents, two in three with a front-matter ``version`` (each
edit adds one), the rest versioned by their modification time (each edit sets a new
whole second, the file written aside and renamed into place, so the watcher never
reads it half-written). Three rounds of: ``policy-indexer run`` (embedded, folder
source), edit every file, SIGKILL as soon as the queue holds 5 changes not yet committed
(the worker is busy: some are not indexed yet), edit some files more while it is down.
A last run then catches up.

Every document must end at its file's version (what the folder source lists:
front matter, else the mtime) with exactly the chunks its file gives. Before this
change each restart sent the still-queued changes again at one version more: 56 of the
150 documents ended 1-3 versions above their file, all shown ``current``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from support.embedded_run import EmbeddedRun, Process, clean_env
from support.waiting import wait_until
from support.workers import free_port

from chunker import chunk_document
from sources.folder import MarkdownFolderSource
from transport.local_queue import LocalQueue

pytestmark = pytest.mark.slow

TOPIC = "policy.document-changes"
FILES = 150
ROUNDS = 3
BASE_MTIME = int(time.time()) - 10 * 86400  # whole seconds, in the past, growing per edit


class Library:
    """The files and what each one is now (its version rule, its edit count)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.edits = [0] * FILES
        self.next_mtime = BASE_MTIME
        for i in range(FILES):
            self.write(i)

    def write(self, i: int) -> None:
        edit = self.edits[i]
        front = f"---\nversion: {edit + 1}\n---\n" if i % 3 else ""
        sections = "\n".join(
            f"## Rule {n} of policy {i}\n\n"
            + f"Edit {edit} of policy {i}, rule {n}: riders may ask within {edit + n} days. " * 25
            + "\n"
            for n in range(12)
        )
        path = self.root / f"area-{i % 10}" / f"policy-{i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        aside = path.with_name(f"{path.name}.tmp")
        aside.write_text(f"{front}# Policy {i}\n\n{sections}", encoding="utf-8")
        self.next_mtime += 1
        os.utime(aside, (self.next_mtime, self.next_mtime))
        os.replace(aside, path)

    def edit(self, i: int) -> None:
        self.edits[i] += 1
        self.write(i)


def tail(run: Process) -> str:
    return run.output[-3000:]


def indexed_chunks(index: Path) -> dict[str, dict[str, str]]:
    """chunk id -> text, per document, read straight from the index file."""
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT document_id, chunk_id, body FROM chunks").fetchall()
    finally:
        conn.close()
    found: dict[str, dict[str, str]] = {}
    for document_id, chunk_id, body in rows:
        found.setdefault(document_id, {})[chunk_id] = json.loads(body)["text"]
    return found


def test_kill_9_while_editing_leaves_every_document_at_its_files_version(
    tmp_path: Path,
) -> None:
    library_root = tmp_path / "library"
    library = Library(library_root)
    data = tmp_path / "data"
    port = free_port()
    env = clean_env(embedded_dir=str(data), source_kind="folder",
                    source_path=str(library_root), metrics_port=str(port),
                    log_level="WARNING", watch_debounce_ms="50", watch_rescan_seconds="1")
    deployment = EmbeddedRun(root=tmp_path, data=data, env=env, port=port, cwd=tmp_path)
    held_at_kill: list[int] = []
    for round_ in range(ROUNDS):
        run = deployment.start()
        try:
            deployment.wait_healthy(run)
            queue = LocalQueue(data / "queue.sqlite3")
            try:
                for i in range(FILES):
                    library.edit(i)
                held = wait_until(partial(queue.pending, TOPIC), 60,
                                  f"round {round_}: changes queued and not yet committed",
                                  every_s=0.01, accept=lambda n: n >= 5,
                                  on_timeout=partial(tail, run))
                run.popen.kill()  # SIGKILL, mid-way
                run.popen.wait(timeout=30)
                held_at_kill.append(queue.pending(TOPIC))
                assert held
            finally:
                queue.close()
        finally:
            run.close()
        for i in range(round_, FILES, 7):  # edited while it is down
            library.edit(i)

    listed = {e.document_id: e.version
              for e in MarkdownFolderSource(library_root).list_documents()}
    assert len(listed) == FILES
    final: Process = deployment.start()
    try:
        deployment.wait_healthy(final)

        def report() -> dict[str, Any]:
            assert final.popen.poll() is None, final.output[-3000:]
            return deployment.status()

        status = wait_until(
            report, 120, "every document current and the queue empty", every_s=0.3,
            accept=lambda s: s["queued"] == 0 and len(s["documents"]) == FILES and all(
                d["status"] == "current" for d in s["documents"]),
            on_timeout=lambda: final.output[-3000:])
        final.popen.terminate()
        assert final.popen.wait(timeout=60) == 0, final.output[-3000:]
    finally:
        final.close()
    assert all(h > 0 for h in held_at_kill), held_at_kill  # each kill left work in the queue
    versions = {d["document_id"]: d["indexed_version"] for d in status["documents"]}
    above = {doc: versions[doc] - v for doc, v in listed.items() if versions[doc] != v}
    assert above == {}, f"{len(above)} documents not at their file's version: {above}"
    assert status["dead_letters"] == 0 and status["max_lag_seconds"] == 0

    source = MarkdownFolderSource(library_root)
    chunks = indexed_chunks(data / "index.sqlite3")
    for document_id, version in listed.items():
        doc = source.get_document(document_id)
        expected = {
            c.chunk_id: c.text for c in chunk_document(
                document_id, version, doc.content, content_type=doc.content_type,
                metadata=doc.metadata.overrides(), changed_at=doc.changed_at)
        }
        assert chunks.get(document_id) == expected, document_id
