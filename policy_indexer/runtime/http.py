"""``/metrics``, ``/healthz`` and ``/readyz`` for every long-running process, served one way.

``/metrics`` is the process's one registry. Both probes answer the body of the
process's ``health`` function (``{"status": ..., ...}``), judged by
``policy_indexer.runtime.probes.Probes``:

- ``/readyz`` (readiness): 200 while the status is ``ok``; 503 at once while a worker
  connects to Kafka and Elasticsearch at start (``starting``) or drains on SIGTERM
  (``stopping``); a worker that backs off from a transient failure or is away from
  Kafka (``retrying``), or a part whose passes fail (``failing``), stays 200 for the
  readiness grace (``POLICY_INDEXER_READINESS_GRACE_SECONDS``), the reason in the body,
  then 503;
- ``/healthz`` (liveness): 200 while the process serves, 503 when a part says it
  ``failed`` (the folder watcher that cannot go on) or the worker loop's heartbeat is
  older than ``POLICY_INDEXER_LIVENESS_HEARTBEAT_SECONDS`` (a stuck loop): a restart
  may help then, never for ``retrying``, which a restart would not mend.

Any other path is 404, so a probe of the wrong path fails.
"""

from __future__ import annotations

import json
import threading
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
from policy_indexer.runtime.probes import Health, Heartbeat, ProbePolicy, Probes, no_heartbeat

__all__ = ["Health", "MetricsServer", "ProbePolicy", "always_ok", "process_registry",
           "worker_health", "worker_heartbeat"]


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


def worker_heartbeat(health: HealthState) -> Heartbeat:
    """The worker loop's last turn (monotonic), for liveness; None before its first."""
    return lambda: health.heartbeat


class MetricsServer:
    """A small threaded HTTP server; also a ``Part`` (name, start, stop, alive, error)."""

    name = "metrics server"
    error = None

    def __init__(self, host: str, port: int, registry: CollectorRegistry,
                 health: Health = always_ok, *, policy: ProbePolicy | None = None,
                 heartbeat: Heartbeat = no_heartbeat) -> None:
        registry_ = registry
        probes = Probes(health, policy, heartbeat=heartbeat)
        self.probes = probes

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry_))
                elif path in ("/healthz", "/readyz"):
                    code, body = (probes.readiness() if path == "/readyz"
                                  else probes.liveness())
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
