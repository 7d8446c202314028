"""The ASGI app: ``POST /webhooks/cms``, ``POST /webhooks/<adapter>``, health and metrics.

``/webhooks/cms`` is our own format (``receiver``); each CMS adapter
(``webhooks.adapters``: github, gitlab, standard...) gets ``/webhooks/<name>``.

``create_app`` takes everything it uses (config, publisher, metrics registry),
so tests and the bench build it with their own; nothing is global.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from foundation.http.routes import metrics_route, ok, probe_routes
from transport.publisher import EventPublisher
from webhooks.adapters.base import Adapter
from webhooks.adapters.endpoint import AdapterEndpoint, EndpointLimits
from webhooks.config import WebhookConfig
from webhooks.metrics import WebhookMetrics
from webhooks.owners import OwnerLookup
from webhooks.receiver import CmsWebhookReceiver

CMS_ROUTE = "/webhooks/cms"


def create_app(
    config: WebhookConfig | None,
    publisher: EventPublisher,
    registry: CollectorRegistry,
    *,
    clock: Callable[[], float] = time.time,
    extra_routes: list[Route] | None = None,
    adapters: Sequence[Adapter] = (),
    adapter_limits: EndpointLimits | None = None,
    owners: OwnerLookup | None = None,
) -> Starlette:
    """Build the receiver; ``extra_routes`` lets the bench add its ceiling endpoint.

    ``config`` None: no ``/webhooks/cms`` (only adapters are configured). ``owners``: who
    owns a document id (``webhooks.owners``); an event for another source's id is a 409.
    """
    metrics = WebhookMetrics.create(registry)
    endpoints = [AdapterEndpoint(a, publisher, metrics, adapter_limits or EndpointLimits(), clock,
                                 owners=owners)
                 for a in adapters]
    names = [e.route for e in endpoints]
    if len(set(names)) != len(names) or CMS_ROUTE in names:
        raise ValueError(f"adapter routes must be unique and not {CMS_ROUTE}: {names}")

    def readiness() -> tuple[int, dict[str, Any]]:
        if publisher.ready():
            return 200, {"status": "ready"}
        return 503, {"status": "unavailable", "detail": "cannot reach the queue"}

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        # Connect to Kafka early, without holding up startup when it is down.
        threading.Thread(target=publisher.ready, name="publisher-warm-up", daemon=True).start()
        yield

    routes = [Route(e.route, e.handle, methods=["POST"]) for e in endpoints]
    if config is not None:
        receiver = CmsWebhookReceiver(config, publisher, metrics, clock, owners)
        routes.append(Route(CMS_ROUTE, receiver.handle, methods=["POST"]))
    routes += [
        *probe_routes(ok, readiness),
        metrics_route(registry),
        *(extra_routes or []),
    ]
    known = frozenset(r.path for r in routes)
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(RequestCounter, metrics=metrics, known_routes=known)],
    )


class RequestCounter:
    """Counts every answered request by route (``other`` for unknown paths) and status."""

    def __init__(self, app: ASGIApp, metrics: WebhookMetrics, known_routes: frozenset[str]):
        self._app = app
        self._metrics = metrics
        self._known = known_routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        status = 500

        async def record_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        route = scope["path"] if scope["path"] in self._known else "other"
        try:
            await self._app(scope, receive, record_status)
        finally:
            self._metrics.requests.labels(route, str(status)).inc()
