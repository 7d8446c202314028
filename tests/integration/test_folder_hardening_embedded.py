"""A bad file is that file's problem only, end to end on the embedded mode.

For each bad file of the issue (a symbolic link loop, a file the process may not
read, invalid UTF-8, a binary file, bad YAML front matter, a FIFO named
``a.md``, a file above the size bound) placed in a copy of the sample library,
``policy-indexer run`` (embedded: local queue, SQLite index, folder watcher,
monitor, scheduler) is started as a user starts it, and:

- the 8 good documents are indexed, ``status`` exits 0, shows them current and
  the bad file ``unreadable`` with its reason;
- the monitor's ``/metrics`` counts the bad file in
  ``policy_indexer_unreadable_documents{reason}`` and never reports a lag (not
  even in its first cycle, which waits for the first indexing);
- ``/healthz`` stays 200 with the watcher ``ok``, ``reindex`` succeeds and
  leaves the bad file alone, and a later edit of a good file is still indexed
  (the watcher goes on).

The permission case: the tests run as root, and root reads a mode-000 file. So
that case runs every command under ``setpriv`` with CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH dropped from the bounding and inheritable sets: still uid
0 (the data directory stays writable), but the kernel refuses the file with
EACCES as it would to any other user. Commands that could block on the FIFO
run with a timeout.

This module uses only the command line and HTTP, no import of the code under
test, so it can run against an older checkout to show each case failing there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
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
GOOD = 8  # documents of the sample library
MAX_FILE_BYTES = 64 * 1024
COMMAND_TIMEOUT_S = 60  # a command blocked on the FIFO fails the test instead of hanging it
DROP_DAC = "-dac_override,-dac_read_search"


def _symlink_loop(root: Path) -> None:
    os.symlink("selfloop.md", root / "selfloop.md")


def _mode_000(root: Path) -> None:
    (root / "secret.md").write_text("## Root only\nNobody may read this.\n")
    (root / "secret.md").chmod(0o000)


def _latin1(root: Path) -> None:
    (root / "latin.md").write_bytes(b"## Caf\xe9\nR\xe8gle en Latin-1.\n")


def _binary(root: Path) -> None:
    (root / "logo.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10")


def _bad_yaml(root: Path) -> None:
    (root / "broken.md").write_text("---\ntitle: [unclosed\nversion: 3\n---\n## Broken\n")


def _fifo(root: Path) -> None:
    os.mkfifo(root / "a.md")


def _too_large(root: Path) -> None:
    (root / "export.md").write_text("## Export\n" + "row, row, row\n" * 10_000)


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[Path], None]
    document_id: str
    reason: str
    as_user: bool = False  # run every command without root's read-anything capabilities


CASES = [
    Case("symlink loop", _symlink_loop, "selfloop", "symlink_loop"),
    Case("mode 000 file", _mode_000, "secret", "permission", as_user=True),
    Case("invalid UTF-8", _latin1, "latin", "encoding"),
    Case("binary file", _binary, "logo", "binary"),
    Case("bad YAML front matter", _bad_yaml, "broken", "front_matter"),
    Case("FIFO named a.md", _fifo, "a", "not_regular"),
    Case("too large", _too_large, "export", "too_large"),
]


@dataclass
class Library:
    case: Case
    root: Path
    env: dict[str, str]
    port: int
    run: Process | None = None
    lags_seen: list[float] = field(default_factory=list)

    def argv(self, *args: str) -> list[str]:
        prefix: list[str] = []
        if self.case.as_user:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.fail("setpriv (util-linux) is missing: the permission case needs it")
            prefix = [setpriv, f"--bounding-set={DROP_DAC}", f"--inh-caps={DROP_DAC}"]
        return [*prefix, CLI, *args]

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*args), env=self.env, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S, check=False)

    def status(self) -> dict[str, Any]:
        done = self.cli("status", "--json")
        assert done.returncode == 0, f"status exited {done.returncode}: {done.stderr[-2000:]}"
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        text = httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5).text
        found = {(s.name, tuple(sorted(s.labels.items()))): s.value
                 for family in text_string_to_metric_families(text) for s in family.samples}
        lag = found.get(("policy_indexer_max_lag_seconds", ()))
        if lag is not None:
            self.lags_seen.append(lag)
        return found

    def output(self) -> str:
        return "" if self.run is None else self.run.output[-3000:]


@pytest.fixture(params=CASES, ids=[c.name for c in CASES])
def library(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Library]:
    case: Case = request.param
    root = tmp_path / "library"
    shutil.copytree(LIBRARY, root)
    case.make(root)
    port = free_port()
    env = clean_env(
        embedded_dir=str(tmp_path / "data"), source_kind="folder", source_path=str(root),
        metrics_port=str(port), search_encoder="none", log_level="WARNING",
        folder_max_file_bytes=str(MAX_FILE_BYTES), watch_rescan_seconds="0.5",
    )
    lib = Library(case, root, env, port)
    lib.run = start_run(tmp_path, env, lib.argv("run"))
    try:
        yield lib
    finally:
        if lib.run.popen.poll() is None:
            lib.run.popen.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):  # close() kills it then
                lib.run.popen.wait(30)
        lib.run.close()


def test_one_bad_file_is_that_files_problem_only(library: Library) -> None:
    case, run = library.case, library.run
    assert run is not None
    def first_indexing_done() -> bool:
        """Also reads /metrics all along: no lag may show up before or after it."""
        with contextlib.suppress(httpx.HTTPError):
            library.metrics()
        return run.said("indexed: ")

    wait_until(first_indexing_done, 60, "the first indexing to finish", every_s=0.1,
               on_timeout=library.output)
    assert run.said(f"indexed: {GOOD} documents"), library.output()

    status = library.status()
    docs = {d["document_id"]: d for d in status["documents"]}
    assert len(docs) == GOOD + 1, sorted(docs)
    bad = docs.pop(case.document_id)
    assert bad["status"] == "unreadable" and bad["lag_seconds"] is None, bad
    assert bad["reason"].startswith(f"{case.reason}: "), bad
    assert bad["indexed_version"] is None and bad["chunks"] == 0, bad
    assert all(d["status"] == "current" and d["lag_seconds"] == 0 and d["chunks"] > 0
               for d in docs.values()), docs
    assert (status["behind"], status["unreadable"], status["max_lag_seconds"]) == (0, 1, 0)
    assert status["dead_letters"] == 0

    unreadable = ("policy_indexer_unreadable_documents", (("reason", case.reason),))
    found = wait_until(library.metrics, 30, "the monitor to count the unreadable file",
                       accept=lambda m: m.get(unreadable) == 1, retry_on=(httpx.HTTPError,))
    assert sum(v for (name, _), v in found.items()
               if name == "policy_indexer_unreadable_documents") == 1
    assert found[("policy_indexer_unreadable_document",
                  (("document_id", case.document_id), ("reason", case.reason)))] == 1
    assert found[("policy_indexer_source_listing_consecutive_failures", ())] == 0
    assert library.lags_seen and set(library.lags_seen) == {0.0}, library.lags_seen

    health = httpx.get(f"http://127.0.0.1:{library.port}/healthz", timeout=5)
    assert health.status_code == 200, health.text
    assert health.json()["folder_watcher"]["status"] == "ok", health.text

    reindex = library.cli("reindex")
    assert reindex.returncode == 0, reindex.stdout + reindex.stderr
    assert "outcome: success" in reindex.stdout and "reason unreadable: 1" in reindex.stdout, (
        reindex.stdout)

    refunds = library.root / "refunds" / "index.md"
    before = docs["refunds"]["indexed_version"]
    refunds.write_text(refunds.read_text() + "\n## Edited\nA later edit is indexed too.\n")
    wait_until(lambda: {d["document_id"]: d for d in library.status()["documents"]}["refunds"],
               20, "the edit after the bad file to be indexed",
               accept=lambda d: d["indexed_version"] > before, on_timeout=library.output)

    run.popen.send_signal(signal.SIGTERM)
    assert run.popen.wait(30) == 0, library.output()
