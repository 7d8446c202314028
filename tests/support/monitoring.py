"""A real monitoring stack for tests: policy-indexer processes scraped by the real Prometheus.

``Process`` runs ``policy-indexer <command>`` with settings in its environment and
registers its /metrics with the local Prometheus through a file_sd target file
labelled ``test=<unique>`` and ``component=<kind>``, so every alert and series a
test causes carries its own label and cannot be confused with another test's.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from support.faulty_cli import command as faulty_command
from support.waiting import wait_until

T = TypeVar("T")
# Through the test entry point, so a process given TEST_FAULT_KILL_AT arms the crash hook.
CLI = faulty_command()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = 60.0,
             every_s: float = 0.5, on_timeout: Callable[[], str] = lambda: "") -> T:
    found = wait_until(probe, timeout_s, what, every_s=every_s, on_timeout=on_timeout)
    assert found is not None  # wait_until returns only a truthy value
    return found


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:  # 400 carries the PromQL error in its body
            return json.loads(exc.read())

    def query(self, promql: str) -> list[dict[str, Any]]:
        body = self.get("/api/v1/query", query=promql)
        if body.get("status") != "success":
            raise AssertionError(f"PromQL failed: {promql!r}: {body.get('error')}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def value(self, promql: str) -> float | None:
        result = self.query(promql)
        return float(result[0]["value"][1]) if result else None

    def alerts(self, name: str, test: str) -> list[dict[str, Any]]:
        alerts = self.get("/api/v1/alerts")["data"]["alerts"]
        return [a for a in alerts
                if a["labels"].get("alertname") == name and a["labels"].get("test") == test]


class Process:
    def __init__(self, command: list[str], env: dict[str, str], *, component: str, test: str,
                 targets_dir: Path, log_path: Path, port: int) -> None:
        self.command, self.env, self.component = command, env, component
        self.port, self.log_path = port, log_path
        self.target_file = targets_dir / f"{test}-{component}.json"
        self.labels = {"test": test, "component": component}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        full_env = {**os.environ, **self.env}
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([*CLI, *self.command], env=full_env,
                                         cwd=self.log_path.parent,  # no stray .env file
                                         stdout=log, stderr=subprocess.STDOUT)
        wait_for(f"{self.component} /metrics on port {self.port}", self._serving, 60,
                 on_timeout=self.tail)
        self.target_file.write_text(json.dumps(
            [{"targets": [f"127.0.0.1:{self.port}"], "labels": self.labels}]))
        return self

    def _serving(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"{self.component} exited {self.proc.returncode}: {self.tail()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2):
                return True
        except OSError:
            return False

    def metrics_text(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            return str(r.read().decode())

    def stop(self, *, keep_target: bool = False) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if not keep_target:
            self.target_file.unlink(missing_ok=True)

    def wait_exit(self, timeout_s: float = 60) -> int:
        if self.proc is None:
            return 0
        return self.proc.wait(timeout=timeout_s)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
