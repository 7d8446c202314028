"""Helpers for tests that run ``policy-indexer run`` (embedded) as a user does."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from sources.folder import MarkdownFolderSource
from support.waiting import wait_until
from support.workers import CLI


def within(seconds: float, condition: Callable[[], bool], what: str) -> None:
    wait_until(condition, seconds, what, every_s=0.02)


@dataclass
class Process:
    popen: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def close(self) -> None:
        """Kill the process if it still runs; read the rest of its output; close the pipe."""
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()
        if self.reader is not None:
            self.reader.join(10)
        if self.popen.stdout is not None:
            self.popen.stdout.close()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.append(line)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    @property
    def output(self) -> str:
        return "".join(self.lines)


def start_run(cwd: Path, env: dict[str, str], argv: list[str]) -> Process:
    return Process(subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True))


def clean_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    env.update({f"POLICY_INDEXER_{k.upper()}": v for k, v in settings.items()})
    return env


def status_json(cwd: Path, env: dict[str, str], cli: str = CLI) -> dict[str, object]:
    done = subprocess.run([cli, "status", "--json"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def assert_library_indexed(status: dict[str, object], library: Path) -> None:
    """Every document of the folder is in the index at the folder's version, lag 0."""
    listed = {e.document_id: e.version for e in MarkdownFolderSource(library).list_documents()}
    documents = status["documents"]
    assert isinstance(documents, list)
    by_id = {d["document_id"]: d for d in documents}
    assert by_id.keys() == listed.keys()
    for document_id, version in listed.items():
        doc = by_id[document_id]
        assert doc["source_version"] == version, doc
        assert doc["indexed_version"] == version, doc
        assert doc["lag_seconds"] == 0 and doc["chunks"] > 0, doc
    assert status["max_lag_seconds"] == 0
    assert status["dead_letters"] == 0


@dataclass
class EmbeddedRun:
    """One embedded deployment of a test: its library, data folder, settings and /metrics port."""

    root: Path
    data: Path
    env: dict[str, str]
    port: int
    cwd: Path

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CLI, *args], env=self.env, capture_output=True, text=True,
                              timeout=60, check=False, cwd=self.cwd)

    def status(self) -> dict[str, Any]:
        done = self.cli("status", "--json")
        assert done.returncode == 0, done.stderr[-2000:]
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    def letters(self) -> list[dict[str, Any]]:
        done = self.cli("dead-letters", "list", "--json")
        assert done.returncode == 0, done.stderr[-2000:]
        return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]

    def start(self) -> Process:
        return start_run(self.cwd, self.env, [CLI, "run"])

    def wait_healthy(self, run: Process) -> None:
        def healthy() -> bool:
            assert run.popen.poll() is None, f"run exited {run.popen.returncode}: {run.output}"
            answer = httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=2)
            return bool(answer.status_code == 200)
        wait_until(healthy, 60, "/healthz to answer 200", every_s=0.1,
                   retry_on=(httpx.HTTPError,), on_timeout=lambda: run.output[-3000:])
