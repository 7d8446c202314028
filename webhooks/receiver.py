"""``POST /webhooks/cms``: from raw request to an event the queue holds, or a refusal.

The checks run cheapest first, and nothing is published unless all pass:

1. ``Policy-Signature`` present, well formed, timestamp within tolerance  → 401
2. ``Content-Type: application/json`` (UTF-8)                             → 415
3. body size, enforced while reading                                      → 413
4. HMAC of the raw body against each configured secret                    → 401
5. JSON (→ 400) that validates as a version-1 payload                     → 422
6. the id is not another source's (index state, configured folder)       → 409
7. published with acks=all within the publish timeout  → 202, else 503 + Retry-After

Checks 2, 3 and the JSON of 5 are ``foundation.http.edge``'s, as for every
route; ``refuse`` logs a refusal the webhooks' way (the adapters' too).
Logs carry event id, document id, action and version; never the content,
the headers or the signature.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

import anyio
import structlog
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from events.model import ChangeEvent
from foundation.http.edge import InvalidJson, checked_body, refusal, unread, validate_json
from foundation.validation import field_errors
from transport.publisher import EventPublisher, PublishError, PublishRejected
from webhooks import signature
from webhooks.config import WebhookConfig
from webhooks.metrics import WebhookMetrics
from webhooks.owners import OwnerLookup, conflict
from webhooks.payload import EVENT_FIELD_TO_PAYLOAD, WebhookPayload

log = structlog.get_logger(__name__)

# Verifying and parsing a body this large moves off the event loop.
_OFFLOAD_BYTES = 256 * 1024


class InvalidPayload(Exception):
    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} field error(s)")
        self.errors = errors


class CmsWebhookReceiver:
    def __init__(
        self,
        config: WebhookConfig,
        publisher: EventPublisher,
        metrics: WebhookMetrics,
        clock: Callable[[], float] = time.time,
        owners: OwnerLookup | None = None,
    ) -> None:
        self._config = config
        self._owners = owners
        self._publisher = publisher
        self._metrics = metrics
        self._clock = clock
        self._limiter = anyio.CapacityLimiter(config.max_pending_publishes)

    async def handle(self, request: Request) -> Response:
        cfg = self._config
        try:
            parsed = signature.parse(request.headers.get(signature.HEADER))
            signature.check_timestamp(parsed, self._clock(), cfg.timestamp_tolerance_seconds)
        except signature.SignatureError as exc:
            return await unread(request, self._unauthorized(request, exc))
        body = await checked_body(request, cfg.max_body_bytes, partial(refuse, request))
        if isinstance(body, Response):
            return body
        self._metrics.payload_bytes.observe(len(body))
        try:
            if len(body) >= _OFFLOAD_BYTES:
                event = await anyio.to_thread.run_sync(self._decode, parsed, body)
            else:
                event = self._decode(parsed, body)
        except signature.SignatureError as exc:
            return self._unauthorized(request, exc)
        except InvalidJson as exc:
            return refuse(request, 400, "invalid_json", str(exc))
        except InvalidPayload as exc:
            return refuse(request, 422, "invalid_payload", "the payload failed validation",
                           errors=exc.errors)
        if self._owners is not None:
            clash = await anyio.to_thread.run_sync(conflict, self._owners, event)
            if clash is not None:
                return refuse(request, 409, "owner_conflict", str(clash),
                              document_id=clash.document_id, owner=clash.owner,
                              source=clash.source)
        return await self._publish(request, event)

    def _decode(self, parsed: signature.ParsedSignature, body: bytes) -> ChangeEvent:
        signature.verify(parsed, body, self._config.secrets)
        try:
            payload = validate_json(WebhookPayload, body)  # InvalidJson: a 400
        except ValidationError as exc:
            raise InvalidPayload(_field_errors(exc)) from exc
        try:
            return payload.to_change_event(received_at=datetime.fromtimestamp(self._clock(), UTC))
        except ValidationError as exc:
            raise InvalidPayload(_field_errors(exc, EVENT_FIELD_TO_PAYLOAD)) from exc

    async def _publish(self, request: Request, event: ChangeEvent) -> JSONResponse:
        ids: dict[str, Any] = {"event_id": event.event_id, "document_id": event.document_id,
               "action": event.action.value, "version": event.version}
        retry = {"Retry-After": str(self._config.retry_after_seconds)}
        if self._limiter.available_tokens < 1:
            return refuse(request, 503, "overloaded",
                           f"too many events are waiting for {self._config.queue_name}; "
                           "retry later", headers=retry, **ids)
        started = time.perf_counter()
        try:
            await anyio.to_thread.run_sync(self._publisher.publish, event, limiter=self._limiter)
        except PublishError as exc:
            outcome = "rejected" if isinstance(exc, PublishRejected) else "unavailable"
            self._metrics.publish_seconds.labels(outcome).observe(time.perf_counter() - started)
            log.warning("the queue did not take the event", queue=self._config.queue_name,
                        error=str(exc), **ids)
            return refuse(request, 503, "queue_unavailable",
                           "the event could not be stored; retry later", headers=retry, **ids)
        elapsed = time.perf_counter() - started
        self._metrics.publish_seconds.labels("ok").observe(elapsed)
        self._metrics.events_accepted.labels(event.action.value).inc()
        log.info("webhook accepted", publish_ms=round(elapsed * 1000, 2), **ids)
        return JSONResponse({"status": "accepted", "event_id": event.event_id,
                             "document_id": event.document_id}, status_code=202)

    def _unauthorized(self, request: Request, exc: signature.SignatureError) -> JSONResponse:
        self._metrics.signature_failures.labels(exc.reason).inc()
        # The message names the rule broken, never the signature or a secret.
        return refuse(request, 401, "unauthorized", str(exc), reason=exc.reason)


def _field_errors(
    exc: ValidationError, relocate: dict[str, tuple[str, ...]] | None = None
) -> list[dict[str, Any]]:
    """Errors without the offending input (it may be document content)."""
    errors = field_errors(exc)
    for err in errors:
        loc = err["loc"]
        if relocate and loc and isinstance(loc[0], str) and loc[0] in relocate:
            err["loc"] = [*relocate[loc[0]], *loc[1:]]
    return errors


def refuse(request: Request, status: int, error: str, detail: str, *,
           errors: list[dict[str, Any]] | None = None, headers: dict[str, str] | None = None,
           **fields: Any) -> JSONResponse:
    """``edge.refusal``, logged the webhooks' way: the client, the fields, each error's
    location and type (never its input)."""
    client = request.client.host if request.client else None
    if errors:
        fields["field_errors"] = [(e["loc"], e["type"]) for e in errors]
    log.warning("webhook refused", status=status, error=error, detail=detail, client=client,
                **fields)
    return refusal(status, error, detail, errors=errors, headers=headers)
