"""``POST /webhooks/<adapter>``: the checks every adapter shares, in one order.

1. Content-Type one of the adapter's media types (UTF-8)            → 415
2. body size, enforced while reading                                → 413
3. ``adapter.authenticate``: the CMS's scheme, in constant time     → 401 (reason)
4. ``adapter.handle`` in a worker thread: parse, decide, publish    → 400, 403, 422, 503;
   each event is checked against its document's owner first         → 409 (``OwnedElsewhere``;
   the events of the request published before it stay published)
5. answered: ``Accepted`` → 202 with the event count; ``Ignored`` → 202 ``ignored``;
   a publish that failed → 503 + Retry-After (the CMS retries; redelivery is harmless)

Steps 1 and 2 are ``foundation.http.edge``'s, as for every route. The body is
read before the signature is checked because every scheme here
signs the body (or, for GitLab, is a token the size limit still protects).
Logs carry the adapter, the status and event counts; never the body, a
header value or a secret.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import anyio
import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from events.model import ChangeEvent
from foundation.http.edge import checked_body
from transport.publisher import EventPublisher, PublishError
from webhooks.adapters.base import Accepted, Adapter, AdapterError, OwnedElsewhere, WebhookRequest
from webhooks.config import MAX_BODY_BYTES
from webhooks.metrics import WebhookMetrics
from webhooks.owners import OwnerLookup, conflict
from webhooks.receiver import refuse

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class EndpointLimits:
    max_body_bytes: int = MAX_BODY_BYTES
    retry_after_seconds: int = 5


class AdapterEndpoint:
    def __init__(self, adapter: Adapter, publisher: EventPublisher, metrics: WebhookMetrics,
                 limits: EndpointLimits, clock: Callable[[], float] = time.time,
                 *, owners: OwnerLookup | None = None) -> None:
        self.adapter = adapter
        self.route = f"/webhooks/{adapter.name}"
        self._publisher: EventPublisher = (
            publisher if owners is None else OwnerCheckedPublisher(publisher, owners))
        self._metrics = metrics
        self._limits = limits
        self._clock = clock

    async def handle(self, request: Request) -> Response:
        body = await checked_body(request, self._limits.max_body_bytes,
                                  partial(refuse, request, adapter=self.adapter.name),
                                  self.adapter.media_types)
        if isinstance(body, Response):
            return body
        self._metrics.payload_bytes.observe(len(body))
        incoming = WebhookRequest({k.lower(): v for k, v in request.headers.items()}, body,
                                  self._clock())
        try:
            self.adapter.authenticate(incoming)
            outcome = await anyio.to_thread.run_sync(self.adapter.handle, incoming,
                                                     self._publisher)
        except AdapterError as exc:
            return self._refused(request, exc)
        except PublishError as exc:
            log.warning("the queue did not take the events", adapter=self.adapter.name,
                        error=str(exc))
            return refuse(request, 503, "queue_unavailable",
                          "the events could not be stored; retry later",
                          headers={"Retry-After": str(self._limits.retry_after_seconds)},
                          adapter=self.adapter.name)
        if not isinstance(outcome, Accepted):
            log.info("webhook ignored", adapter=self.adapter.name, reason=outcome.reason)
            return JSONResponse({"status": "ignored", "detail": outcome.reason},
                                status_code=202)
        for event in outcome.events:
            self._metrics.events_accepted.labels(event.action.value).inc()
        log.info("webhook accepted", adapter=self.adapter.name, events=len(outcome.events),
                 **outcome.detail)
        return JSONResponse({"status": "accepted", "events": len(outcome.events),
                             "document_ids": [e.document_id for e in outcome.events][:1000],
                             **outcome.detail}, status_code=202)

    def _refused(self, request: Request, exc: AdapterError) -> JSONResponse:
        headers = None
        if exc.status == 401:
            self._metrics.signature_failures.labels(exc.reason).inc()
        if exc.status == 503:
            headers = {"Retry-After": str(self._limits.retry_after_seconds)}
        return refuse(request, exc.status, exc.error, str(exc), errors=exc.errors,
                      headers=headers, adapter=self.adapter.name, reason=exc.reason)


class OwnerCheckedPublisher:
    """The adapter's publisher: an event for a document another source owns is not
    published but refused, ``OwnedElsewhere`` (409), naming the document and both owners."""

    def __init__(self, inner: EventPublisher, owners: OwnerLookup) -> None:
        self._inner = inner
        self._owners = owners

    def publish(self, event: ChangeEvent) -> None:
        clash = conflict(self._owners, event)
        if clash is not None:
            raise OwnedElsewhere(str(clash), reason="owner")
        self._inner.publish(event)

    def ready(self) -> bool:
        return self._inner.ready()

    def close(self) -> None:
        self._inner.close()

