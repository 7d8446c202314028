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

Any other path is 404, so a probe of the wrong path fails. The routes and the
server thread are ``foundation.http``'s, as for the webhook receiver and search.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from consumers.retry import HealthState
from foundation.http.routes import metrics_route, probe_routes
from foundation.http.server import ServerNotStarted, ServerThread
from policy_indexer.runtime.parts import PartError
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
    """``/metrics`` and the probes served in a thread; also a ``Part`` (name, start, stop,
    alive, error). Binding happens here: an address in use is an ``OSError`` at once."""

    name = "metrics server"
    error = None

    def __init__(self, host: str, port: int, registry: CollectorRegistry,
                 health: Health = always_ok, *, policy: ProbePolicy | None = None,
                 heartbeat: Heartbeat = no_heartbeat) -> None:
        self.probes = Probes(health, policy, heartbeat=heartbeat)
        app = Starlette(
            routes=[*probe_routes(self.probes.liveness, self.probes.readiness),
                    metrics_route(registry)],
            exception_handlers={404: _not_found},
        )
        self._server = ServerThread(app, host, port, name=self.name)
        self.host = host
        self.port: int = self._server.port
        self.url = self._server.url

    def start(self) -> None:
        try:
            self._server.start()
        except ServerNotStarted as exc:
            raise PartError(f"{self.name} did not start on {self.url}") from exc

    def alive(self) -> bool:
        return self._server.alive()

    def stop(self) -> None:
        self._server.stop()


async def _not_found(_: Request, __: Exception) -> Response:
    return PlainTextResponse("not found: /metrics, /healthz or /readyz\n", status_code=404)
