"""The worker's HTTP endpoint: ``/metrics`` (Prometheus) and ``/healthz``.

``/healthz`` answers 200 ``{"status": "ok"}`` while the worker makes progress and
503 ``{"status": "retrying", ...}`` while it backs off from a transient failure
or cannot reach Kafka (a readiness signal: restarting a retrying worker does not
help it).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from consumers.retry import HealthState


class HealthServer:
    def __init__(self, host: str, port: int, registry: CollectorRegistry, health: HealthState):
        registry_ = registry
        health_ = health

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/metrics"):
                    self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry_))
                elif self.path.startswith("/healthz"):
                    away = health_.kafka_unreachable
                    status = "retrying" if health_.retrying or away else "ok"
                    if health_.stopping:
                        status = "stopping"
                    body = {
                        "status": status,
                        "attempts": health_.attempts,
                        "last_error": health_.last_error or away,
                    }
                    code = 200 if status == "ok" else 503
                    self._send(code, "application/json", json.dumps(body).encode())
                else:
                    self._send(404, "text/plain", b"not found\n")

            def _send(self, code: int, ctype: str, body: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> HealthServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
