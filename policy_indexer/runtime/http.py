"""``/metrics``, ``/healthz`` and ``/readyz`` for every long-running process, served one way.

``/metrics`` is the process's one registry. Both probes answer the body of the
process's ``health`` function (``{"status": ..., ...}``):

- ``/readyz`` (readiness): 200 only while the status is ``ok``; 503 while a worker
  connects to Kafka and Elasticsearch at start (``starting``), backs off from a
  transient failure or is away from Kafka (``retrying``), drains on SIGTERM
  (``stopping``), or while a part cannot go on;
- ``/healthz`` (liveness): 200 while the process serves, 503 only when a part says
  it ``failed`` (the folder watcher that cannot go on): a restart may help then,
  never for ``retrying``, which a restart would not mend.

Any other path is 404, so a probe of the wrong path fails.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from consumers.retry import HealthState

Health = Callable[[], dict[str, Any]]
# The statuses for which liveness fails (the orchestrator restarts the process).
LIVENESS_FAILURES = frozenset({"failed"})


def process_registry() -> CollectorRegistry:
    """The registry of one long-running process: its parts' metrics, plus the process's own
    (CPU, memory, open files), the platform's (Python version) and the garbage collector's."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def always_ok() -> dict[str, Any]:
    return {"status": "ok"}


def worker_health(health: HealthState) -> Health:
    """The worker's health: ``retrying`` while it backs off or Kafka is away."""

    def report() -> dict[str, Any]:
        away = health.kafka_unreachable
        status = "retrying" if health.retrying or away else "ok"
        if health.starting:
            status = "starting"
        if health.stopping:
            status = "stopping"
        body: dict[str, Any] = {"status": status, "attempts": health.attempts,
                "last_error": health.last_error or away}
        if health.retrying and health.waiting_for:  # "store": unavailable, not an event's fault
            body["waiting_for"] = health.waiting_for
        return body

    return report


class MetricsServer:
    """A small threaded HTTP server; also a ``Part`` (name, start, stop, alive, error)."""

    name = "metrics server"
    error = None

    def __init__(self, host: str, port: int, registry: CollectorRegistry,
                 health: Health = always_ok) -> None:
        registry_, health_ = registry, health

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry_))
                elif path in ("/healthz", "/readyz"):
                    body = health_()
                    status = body.get("status")
                    if path == "/readyz":  # readiness: working, its dependencies answer
                        code = 200 if status == "ok" else 503
                    else:  # liveness: only a part that cannot go on asks for a restart
                        code = 503 if status in LIVENESS_FAILURES else 200
                    self._send(code, "application/json", json.dumps(body).encode())
                else:
                    self._send(404, "text/plain", b"not found: /metrics, /healthz or /readyz\n")

            def _send(self, code: int, ctype: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.host = host
        self.thread = threading.Thread(target=self.server.serve_forever, name="metrics-server",
                                       daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        self.thread.start()

    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
