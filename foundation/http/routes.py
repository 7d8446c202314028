"""The routes every server of the project has: ``/healthz``, ``/readyz``, ``/metrics``.

A probe is a blocking function answering ``(status code, body)``; it runs in a
worker thread (a readiness check may ask Kafka or the index) and its body is
sent as JSON. What a probe decides is its owner's: the webhook receiver asks
its publisher, the search server its index, a process's metrics server its
parts (``policy_indexer.runtime.probes``). ``/metrics`` is one registry in
Prometheus's text format.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

Probe = Callable[[], tuple[int, dict[str, Any]]]


def ok() -> tuple[int, dict[str, Any]]:
    """The probe of a process that is up: 200 ``{"status": "ok"}``."""
    return 200, {"status": "ok"}


def probe_response(code: int, body: dict[str, Any]) -> Response:
    return Response(json.dumps(body), status_code=code, media_type="application/json")


def probe_routes(liveness: Probe = ok, readiness: Probe = ok) -> list[Route]:
    """``GET /healthz`` (liveness) and ``GET /readyz`` (readiness)."""

    async def healthz(_: Request) -> Response:
        return probe_response(*await anyio.to_thread.run_sync(liveness))

    async def readyz(_: Request) -> Response:
        return probe_response(*await anyio.to_thread.run_sync(readiness))

    return [Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"])]


def metrics_response(registry: CollectorRegistry) -> Response:
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def metrics_route(registry: CollectorRegistry) -> Route:
    """``GET /metrics``: ``registry``, to anyone who asks (a loopback or cluster port)."""

    async def metrics(_: Request) -> Response:
        return metrics_response(registry)

    return Route("/metrics", metrics, methods=["GET"])
