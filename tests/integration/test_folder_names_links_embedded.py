"""Hidden names, hard links, names that are not UTF-8 and unlistable folders, end to end
on ``policy-indexer run`` (embedded mode).

Hidden names and links, beside the 8 sample documents: ``gitconfig.md -> .git/config`` (a
token in the remote URL), ``dotenv.md -> .env``, ``x.md`` a hard link to a file
outside the library, and ``caf\\xe9.md`` (a name that is not UTF-8). None is
indexed or served to the public key; ``status`` names each (``hidden``,
``hard_link``, ``name``); ``/metrics`` on the metrics port and on the search port
answer and count them; ``/healthz`` is 200 with the watcher ``ok`` and never
restarted, also after the bad name is touched again; later files are indexed.

An unlistable folder: a sub-folder the process may not list (every command under ``setpriv``
without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH: the tests run as root, and root
lists mode 000). An edit elsewhere is indexed while it cannot be listed; its
documents stay indexed and searchable, ``status`` exits 0 and shows them
``unreadable`` (unlistable) at their indexed version; ``/healthz`` and ``/readyz``
are 200 with the watcher ``degraded`` naming the folder; ``reindex`` succeeds and
deletes nothing; after ``chmod`` back, an edit made meanwhile is indexed and the
watcher is ``ok`` again.

Only the command line and HTTP: no import of the code under test.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.embedded_run import Process, clean_env, start_run
from support.waiting import wait_until
from support.workers import CLI, free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "examples" / "library"
GOOD = 8
TOKEN = "ghp_Zq8LEAKEDTOKEN4471"
PASSWD = "root:x:0:0:secretroot:/root:/bin/bash"
KEY = "rider-key-0123456789abcdef"
METRICS_TOKEN = "metrics-token-0123456789abcdef"
DROP_DAC = "-dac_override,-dac_read_search"


@dataclass
class Run:
    root: Path
    env: dict[str, str]
    port: int
    search_port: int
    as_user: bool
    process: Process | None = None

    def argv(self, *args: str) -> list[str]:
        if not self.as_user:
            return [CLI, *args]
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.fail("setpriv (util-linux) is missing: the unlistable case needs it")
        return [setpriv, f"--bounding-set={DROP_DAC}", f"--inh-caps={DROP_DAC}", CLI, *args]

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*args), env=self.env, capture_output=True, text=True,
                              timeout=60, check=False)

    def status(self) -> dict[str, Any]:
        done = self.cli("status", "--json")
        assert done.returncode == 0, f"status exited {done.returncode}: {done.stderr[-2000:]}"
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    def documents(self) -> dict[str, dict[str, Any]]:
        return {d["document_id"]: d for d in self.status()["documents"]}

    def probe(self, path: str) -> tuple[int, dict[str, Any]]:
        answer = httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=5)
        body: dict[str, Any] = answer.json()
        return answer.status_code, body

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        answer = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5)
        assert answer.status_code == 200
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(answer.text)
                for s in family.samples}

    def search(self, question: str) -> dict[str, Any]:
        answer = httpx.post(f"http://127.0.0.1:{self.search_port}/search",
                            json={"question": question},
                            headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    def output(self) -> str:
        return "" if self.process is None else self.process.output[-4000:]


def start(tmp_path: Path, root: Path, *, as_user: bool) -> Run:
    port, search_port = free_port(), free_port()
    env = clean_env(
        embedded_dir=str(tmp_path / "data"), source_kind="folder", source_path=str(root),
        metrics_port=str(port), search_port=str(search_port), search_encoder="none",
        search_api_keys=json.dumps({"rider": {"key": KEY, "labels": ["public"]}}),
        search_metrics_token=METRICS_TOKEN, log_level="WARNING", watch_rescan_seconds="0.5",
        monitor_interval_seconds="1",
    )
    run = Run(root, env, port, search_port, as_user)
    run.process = start_run(tmp_path, env, run.argv("run"))
    return run


@contextlib.contextmanager
def running(run: Run) -> Iterator[Run]:
    assert run.process is not None
    try:
        wait_until(lambda: run.process is not None and run.process.said("indexed: "), 60,
                   "the first indexing", every_s=0.1, on_timeout=run.output)
        yield run
    finally:
        if run.process.popen.poll() is None:
            run.process.popen.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                run.process.popen.wait(30)
        run.process.close()


def bytes_name(folder: Path, name: bytes, text: bytes, flags: int = os.O_CREAT) -> None:
    fd = os.open(os.fsencode(folder) + b"/" + name, flags | os.O_WRONLY, 0o644)
    os.write(fd, text)
    os.close(fd)


def hostile_library(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    shutil.copytree(LIBRARY, root)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(
        f'[remote "origin"]\n\turl = https://{TOKEN}@github.com/acme/policies.git\n')
    (root / ".env").write_text(f"GITHUB_TOKEN={TOKEN}\n")
    os.symlink(".git/config", root / "gitconfig.md")
    os.symlink(".env", root / "dotenv.md")
    (tmp_path / "passwd").write_text(f"{PASSWD}\n")
    os.link(tmp_path / "passwd", root / "x.md")
    bytes_name(root, b"caf\xe9.md", b"## Caf\xc3\xa9\nLe caf\xc3\xa9 est offert.\n")
    return root


def test_hidden_targets_hard_links_and_bad_names_are_named_never_indexed(
    tmp_path: Path,
) -> None:
    with running(start(tmp_path, hostile_library(tmp_path), as_user=False)) as run:
        assert run.process is not None and run.process.said(f"indexed: {GOOD} documents"), (
            run.output())
        docs = run.documents()
        bad = {d: docs.pop(d) for d in ("gitconfig", "dotenv", "x", "caf\\xe9")}
        assert len(docs) == GOOD and all(d["status"] == "current" for d in docs.values()), docs
        reasons = {d: (b["status"], b["reason"], b["indexed_version"], b["chunks"])
                   for d, b in bad.items()}
        assert reasons["gitconfig"][0] == "unreadable", reasons
        assert reasons["gitconfig"][1].startswith("hidden: ")
        assert "hidden path component '.git'" in reasons["gitconfig"][1]
        assert "hidden path component '.env'" in reasons["dotenv"][1]
        assert reasons["x"][1].startswith("hard_link: ") and "(2 links)" in reasons["x"][1]
        assert reasons["caf\\xe9"][1].startswith("name: ")
        assert "caf\\xe9.md: name not UTF-8" in reasons["caf\\xe9"][1]
        assert all(r[2] is None and r[3] == 0 for r in reasons.values()), reasons

        for question in ("github token remote origin url", "GITHUB_TOKEN", "root bin bash"):
            answer = json.dumps(run.search(question))
            assert TOKEN not in answer and "secretroot" not in answer, answer
            assert not {'"gitconfig"', '"dotenv"', '"x"'} & {
                f'"{p["document_id"]}"' for p in json.loads(answer)["passages"]}

        counted = wait_until(run.metrics, 30, "the monitor to count the refused files",
                             accept=lambda m: m.get(("policy_indexer_unreadable_documents",
                                                     (("reason", "hidden"),))) == 2,
                             retry_on=(httpx.HTTPError,), on_timeout=run.output)
        assert counted[("policy_indexer_unreadable_documents", (("reason", "hard_link"),))] == 1
        assert counted[("policy_indexer_unreadable_documents", (("reason", "name"),))] == 1
        assert counted[("policy_indexer_unreadable_document",
                        (("document_id", "caf\\xe9"), ("reason", "name")))] == 1
        on_search_port = httpx.get(f"http://127.0.0.1:{run.search_port}/metrics", timeout=5,
                                   headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        assert on_search_port.status_code == 200
        assert "policy_indexer_unreadable_documents" in on_search_port.text

        bytes_name(run.root, b"caf\xe9.md", b"Encore.\n", os.O_APPEND)  # touched again
        (run.root / "help" / "opening-hours.md").write_text("## Opening hours\nNine to five.\n")
        wait_until(run.documents, 20, "a file made after the bad name to be indexed",
                   accept=lambda d: (d.get("help/opening-hours") or {}).get("indexed_version")
                   is not None, on_timeout=run.output)
        code, health = run.probe("/healthz")
        assert code == 200 and health["folder_watcher"] == {"status": "ok", "restarts": 0}, (
            health)
        assert run.metrics()[("policy_indexer_unreadable_documents", (("reason", "name"),))] == 1


def test_an_unlistable_sub_folder_keeps_its_documents_and_the_rest_goes_on(
    tmp_path: Path,
) -> None:
    root = tmp_path / "library"
    shutil.copytree(LIBRARY, root)
    private = root / "private"
    private.mkdir()
    (private / "salaries.md").write_text("## Salaries\nSalary bands are reviewed every March.\n")
    (private / "bonus.md").write_text("## Bonus\nThe yearly bonus is paid in April.\n")
    try:
        with running(start(tmp_path, root, as_user=True)) as run:
            assert run.process is not None and run.process.said(
                f"indexed: {GOOD + 2} documents"), run.output()
            before = run.documents()
            private.chmod(0o000)
            wait_until(lambda: run.probe("/healthz")[1]["folder_watcher"]["status"], 20,
                       "the watcher to say degraded", accept=lambda s: s == "degraded",
                       retry_on=(httpx.HTTPError,), on_timeout=run.output)
            for path in ("/healthz", "/readyz"):
                code, body = run.probe(path)
                assert (code, body["status"]) == (200, "ok"), (path, body)
                assert body["folder_watcher"]["unlisted"] == ["private/"], body

            refunds = root / "refunds" / "index.md"
            refunds.write_text(refunds.read_text() + "\n## Edited\nWhile private is locked.\n")
            docs = wait_until(run.documents, 20, "an edit elsewhere to be indexed",
                              accept=lambda d: d["refunds"]["indexed_version"]
                              > before["refunds"]["indexed_version"], on_timeout=run.output)
            for document_id in ("private/salaries", "private/bonus"):
                doc = docs[document_id]
                assert doc["status"] == "unreadable" and doc["lag_seconds"] is None, doc
                assert doc["reason"].startswith("unlistable: under 'private/'"), doc
                assert doc["indexed_version"] == before[document_id]["indexed_version"], doc
                assert doc["chunks"] > 0, doc
            assert docs["private/"]["status"] == "unreadable", docs["private/"]
            passages = [p for p in run.search("when are salary bands reviewed")["passages"]
                        if p["document_id"] == "private/salaries"]
            assert passages, "the unlistable folder's document is no longer searchable"
            # the passage never says its document went from the source (kept, not gone)
            assert all(p["freshness"] is None or not p["freshness"]["behind_source"]
                       for p in passages), passages

            reindex = run.cli("reindex")
            assert reindex.returncode == 0, reindex.stdout + reindex.stderr
            assert "outcome: success" in reindex.stdout, reindex.stdout
            after_reindex = run.documents()
            assert after_reindex["private/bonus"]["indexed_version"] == (
                before["private/bonus"]["indexed_version"])

            salaries = private / "salaries.md"  # the test is root: it writes through mode 000
            salaries.write_text(salaries.read_text() + "\n## Changed\nNow every June.\n")
            private.chmod(0o755)
            wait_until(run.documents, 20, "the folder's edit to be indexed once it lists",
                       accept=lambda d: d["private/salaries"]["status"] == "current"
                       and d["private/salaries"]["indexed_version"]
                       > before["private/salaries"]["indexed_version"], on_timeout=run.output)
            wait_until(lambda: run.probe("/healthz")[1]["folder_watcher"]["status"], 20,
                       "the watcher to say ok", accept=lambda s: s == "ok",
                       retry_on=(httpx.HTTPError,))
            final = run.documents()
            assert "private/" not in final
            assert final["private/bonus"]["status"] == "current", final["private/bonus"]
            assert run.probe("/healthz")[1]["folder_watcher"]["restarts"] == 0
    finally:
        private.chmod(0o755)
