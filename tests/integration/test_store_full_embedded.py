"""The embedded index's disk fills up, end to end: nothing is lost.

The index file lives on a small tmpfs of its own (``index.sqlite3`` in the data folder
is a symlink to it; SQLite follows it, so the ``-wal`` and ``-shm`` files are made
there too); the queue stays on the ordinary disk beside it, as a queue that still takes
changes while the index's disk is full. ``policy-indexer run`` starts, the tmpfs is
filled to the last byte, and a replay of 26 generated documents (two versions each)
is queued: every chunk write fails with "database or disk is full". The worker backs
off (``/readyz`` 503, ``waiting_for: store``, the SQLite error in ``last_error``),
dead-letters nothing however many tries it makes; once the filler file is deleted,
every document reaches its last version with no dead letter, and ``/readyz`` is 200.

Before this change the same run dead-lettered the events as ``unexpected`` after 3
tries, and they stayed missing after the space came back.

Needs root (``mount -t tmpfs``); skipped with the reason otherwise.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.embedded_run import EmbeddedRun, Process, clean_env, start_run
from support.waiting import wait_until
from support.webhook_helpers import encode, payload, signed_headers
from support.workers import CLI, free_port

from store.sqlite import SQLiteStore

pytestmark = pytest.mark.slow

DOCUMENTS = 26
SIZE = "8m"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of ``SIZE`` mounted for this test, unmounted after it."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (mount -t tmpfs)")
    where = tmp_path / "small-disk"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(disk: Path) -> Path:
    """Write a file until the filesystem has no byte left; returns it (delete it to free)."""
    filler = disk / "filler"
    block = b"\0" * 65536
    with filler.open("wb", buffering=0) as out:
        while True:
            try:
                out.write(block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                break
    while True:  # the last partial block
        try:
            with filler.open("ab", buffering=0) as out:
                out.write(b"\0" * 512)
        except OSError:
            return filler


def changelog(path: Path) -> dict[str, int]:
    """Two versions of each of ``DOCUMENTS`` documents, big enough to need new pages."""
    last: dict[str, int] = {}
    with path.open("w", encoding="utf-8") as out:
        seq = 0
        for version in (1, 2):
            for i in range(DOCUMENTS):
                seq += 1
                doc = f"policies/doc-{i:02d}"
                body = "\n\n".join(
                    f"## Rule {n}\n\n" + f"Clause {n} of {doc} at version {version}. " * 40
                    for n in range(8)
                )
                out.write(json.dumps({
                    "seq": seq, "document_id": doc, "path": f"{doc}.md", "action": "upsert",
                    "version": version, "changed_at": f"2026-01-{version:02d}T10:00:00Z",
                    "commit": f"c{seq}", "content": f"# {doc}\n\n{body}\n",
                }) + "\n")
                last[doc] = version
    return last


def readyz(port: int) -> tuple[int, dict[str, Any]]:
    answer = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
    body: dict[str, Any] = answer.json()
    return answer.status_code, body


def test_a_full_index_disk_is_waited_for_and_every_event_indexed_after_space_is_freed(
    tmp_path: Path, small_disk: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "index.sqlite3").symlink_to(small_disk / "index.sqlite3")
    port = free_port()
    env = clean_env(embedded_dir=str(data), metrics_port=str(port), log_level="WARNING",
                    retry_initial_seconds="0.05", retry_max_seconds="0.5",
                    commit_every_records="20",
                    # 503 as soon as it backs off (the grace is tested in test_probes.py)
                    readiness_grace_seconds="0")
    deployment = EmbeddedRun(root=tmp_path, data=data, env=env, port=port, cwd=tmp_path)
    expected = changelog(tmp_path / "generated.jsonl")
    run = deployment.start()
    replay: Process | None = None
    try:
        deployment.wait_healthy(run)
        assert (small_disk / "index.sqlite3").exists()  # the index is on the small disk
        filler = fill(small_disk)
        replay = start_run(tmp_path, env, [CLI, "replay", str(tmp_path / "generated.jsonl")])

        def full() -> tuple[int, dict[str, Any]]:
            assert run.popen.poll() is None, run.output[-3000:]
            return readyz(port)

        _, body = wait_until(
            full, 60, "/readyz to say the worker waits for the store, past 3 tries",
            every_s=0.1, retry_on=(httpx.HTTPError,),
            accept=lambda r: r[0] == 503 and r[1].get("waiting_for") == "store"
            and r[1]["attempts"] >= 6,
            on_timeout=lambda: run.output[-3000:])
        assert body["status"] == "retrying", body
        assert "database or disk is full" in body["last_error"], body
        assert "StoreUnavailableError" in body["last_error"], body
        assert deployment.letters() == []
        assert deployment.status()["queued"] > 0  # held, not taken further
        assert replay.popen.poll() is None  # still waiting for the index to catch up

        filler.unlink()  # space is back

        def caught_up() -> dict[str, Any]:
            assert run.popen.poll() is None, run.output[-3000:]
            return deployment.status()

        status = wait_until(
            caught_up, 90, "every document at its last version after space is freed",
            every_s=0.3,
            accept=lambda s: s["queued"] == 0 and {
                d["document_id"]: d["indexed_version"] for d in s["documents"]} == expected,
            on_timeout=lambda: run.output[-3000:])
        assert status["dead_letters"] == 0
        assert all(d["chunks"] > 0 for d in status["documents"]), status["documents"]
        assert replay.popen.wait(timeout=60) == 0, replay.output[-3000:]
        assert deployment.letters() == []
        assert wait_until(lambda: readyz(port), 10, "/readyz 200 again", every_s=0.1,
                          accept=lambda r: r[0] == 200)[1]["status"] == "ok"
    finally:
        if replay is not None:
            replay.close()
        run.popen.terminate()
        run.popen.wait(timeout=60)
        run.close()
    store = SQLiteStore(data / "index.sqlite3")
    try:
        versions = {s.document_id: s.version for s in store.iter_states()}
        assert versions == expected
        assert {(c.document_id, c.version) for c in store.iter_chunks()} == set(expected.items())
    finally:
        store.close()


WEBHOOK_SECRET = "queue-full-webhook-secret-0001"


def test_a_full_queue_disk_refuses_webhooks_with_503_then_accepts_and_indexes_them(
    tmp_path: Path, small_disk: Path,
) -> None:
    """The queue's own disk fills (the index's has room): a signed webhook is answered
    503 with Retry-After, so the CMS sends it again, and nothing is half-written; once
    space is freed the same request is 202 and the document is indexed."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "queue.sqlite3").symlink_to(small_disk / "queue.sqlite3")
    port, webhook_port = free_port(), free_port()
    env = clean_env(embedded_dir=str(data), metrics_port=str(port), log_level="WARNING",
                    webhook_port=str(webhook_port),
                    webhook_secrets=json.dumps([WEBHOOK_SECRET]), search_encoder="none",
                    retry_initial_seconds="0.05", retry_max_seconds="0.5")
    deployment = EmbeddedRun(root=tmp_path, data=data, env=env, port=port, cwd=tmp_path)
    run = deployment.start()
    try:
        deployment.wait_healthy(run)
        assert (small_disk / "queue.sqlite3").exists()  # the queue is on the small disk
        filler = fill(small_disk)
        body = encode(payload("document.published", id="policies/late-delivery", version=7,
                              content="# Late delivery\n\nThe delivery fee is refunded.\n"))

        def send() -> httpx.Response:
            assert run.popen.poll() is None, run.output[-3000:]
            return httpx.post(f"http://127.0.0.1:{webhook_port}/webhooks/cms", content=body,
                              headers=signed_headers(body, (WEBHOOK_SECRET.encode(),),
                                                     at=time.time()), timeout=10)

        refused = send()
        assert refused.status_code == 503, (refused.status_code, refused.text)
        assert refused.headers.get("Retry-After"), refused.headers
        # `status` cannot open the queue while its disk is full: it says so and exits 1.
        said = deployment.cli("status", "--json")
        assert said.returncode == 1 and "database or disk is full" in said.stderr, said.stderr

        filler.unlink()  # space is back: the CMS's retry goes in
        accepted = wait_until(send, 30, "the webhook to accept once space is freed",
                              every_s=0.3, accept=lambda r: r.status_code == 202,
                              on_timeout=lambda: run.output[-3000:])
        assert accepted.status_code == 202

        def indexed() -> dict[str, Any]:
            assert run.popen.poll() is None, run.output[-3000:]
            return {d["document_id"]: d for d in deployment.status()["documents"]}

        documents = wait_until(indexed, 60, "the webhook's document indexed", every_s=0.3,
                               accept=lambda d: d.get("policies/late-delivery", {})
                               .get("indexed_version") == 7,
                               on_timeout=lambda: run.output[-3000:])
        assert documents["policies/late-delivery"]["chunks"] > 0
        assert deployment.status()["queued"] == 0 and deployment.letters() == []
    finally:
        run.popen.terminate()
        run.popen.wait(timeout=60)
        run.close()
