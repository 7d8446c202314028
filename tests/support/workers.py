"""Run ``policy-indexer run`` worker processes against unique topics and indices."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from support.faulty_cli import FAULT_ENV
from support.faulty_cli import command as faulty_command

CLI = str(Path(sys.executable).with_name("policy-indexer"))


def healthz(port: int) -> dict[str, object]:
    """A worker's ``/healthz`` body (its 503 body too); ``unreachable`` when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
            body: dict[str, object] = json.loads(resp.read())
    except urllib.error.HTTPError as err:
        body = json.loads(err.read())
    except OSError:
        return {"status": "unreachable"}
    return body


def probe(port: int, path: str) -> tuple[int, dict[str, object]]:
    """(status code, JSON body) of a process's ``path``; (0, {}) while nothing listens."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:
            return int(resp.status), json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return int(err.code), json.loads(err.read())
    except OSError:
        return 0, {}


def readyz(port: int) -> int:
    """``/readyz``'s status code (0 while nothing answers)."""
    return probe(port, "/readyz")[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Pipeline:
    """The names one test uses, and the environment its processes get."""

    unique: str
    kafka: str
    elasticsearch: str
    partitions: int = 3
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def topic(self) -> str:
        return f"{self.unique}-changes"

    @property
    def dead_letter_topic(self) -> str:
        return f"{self.unique}-dlq"

    @property
    def group(self) -> str:
        return f"{self.unique}-group"

    def env(self, kill_at: str | None = None, **overrides: str) -> dict[str, str]:
        """The processes' environment; ``kill_at`` arms the crash hook (``faulty_cli``)."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("POLICY_INDEXER_") and k != FAULT_ENV}
        if kill_at:
            env[FAULT_ENV] = kill_at
        env.update({
            "POLICY_INDEXER_PIPELINE": "kafka",
            "POLICY_INDEXER_KAFKA_BOOTSTRAP_SERVERS": self.kafka,
            "POLICY_INDEXER_KAFKA_TOPIC": self.topic,
            "POLICY_INDEXER_KAFKA_DEAD_LETTER_TOPIC": self.dead_letter_topic,
            "POLICY_INDEXER_KAFKA_GROUP_ID": self.group,
            "POLICY_INDEXER_KAFKA_PARTITIONS": str(self.partitions),
            "POLICY_INDEXER_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "POLICY_INDEXER_ELASTICSEARCH_URL": self.elasticsearch,
            "POLICY_INDEXER_INDEX_PREFIX": self.unique,
            "POLICY_INDEXER_METRICS_PORT": "0",
            "POLICY_INDEXER_COMMIT_EVERY_SECONDS": "0.3",
            "POLICY_INDEXER_RETRY_MAX_SECONDS": "2",
            "POLICY_INDEXER_LOG_LEVEL": "WARNING",
        })
        env.update(self.extra)
        env.update({f"POLICY_INDEXER_{k.upper()}": v for k, v in overrides.items()})
        return env

    def cli(self, *args: str, **overrides: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, *args], env=self.env(**overrides), capture_output=True, text=True, timeout=300,
            check=False,
        )

    def start_worker(self, log_dir: Path, **overrides: str) -> Worker:
        log_dir.mkdir(parents=True, exist_ok=True)
        log = log_dir / f"worker-{time.monotonic_ns()}.log"
        with log.open("w") as handle:  # the child keeps its own descriptor
            proc = subprocess.Popen(faulty_command("run"), env=self.env(**overrides), stdout=handle,
                                    stderr=subprocess.STDOUT)
        return Worker(proc, log)


@dataclass
class Worker:
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, then wait: the worker must exit on its own within ``timeout_s``."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(
                f"worker ignored SIGTERM for {timeout_s}s; log: {self.tail()}"
            ) from exc

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
