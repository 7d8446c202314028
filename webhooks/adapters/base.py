"""The adapter interface, what it is handed, what it answers, and its errors.

An adapter is two steps, called by ``endpoint.AdapterEndpoint`` after the
Content-Type and the size limit passed:

1. ``authenticate(request)``: the CMS's signature or token over the raw body,
   compared in constant time, its timestamp checked where the scheme has one.
   Cheap and pure; raises ``Unauthorized``.
2. ``handle(request, publisher)``: parse the body, decide, publish the events
   (blocking: it runs in a worker thread and may fetch from the CMS or Git).
   Returns ``Accepted`` (the events the queue now holds) or ``Ignored`` (a
   valid request that changes nothing: a ping, another branch).

Errors (each one a status; nothing is published unless ``handle`` returns)::

    AdapterError
    ├── Unauthorized      401  signature/token missing, malformed, stale or wrong
    ├── MalformedBody     400  not JSON, or not the JSON object the CMS sends
    ├── InvalidPayload    422  JSON, but fields missing or of the wrong type
    ├── NotThisLibrary    403  validly signed, for a repository this receiver does not serve
    ├── OwnedElsewhere    409  an event for a document another source owns (webhooks.owners)
    └── SourceUnavailable 503  the source (Git remote, CMS API) cannot be read now; retry

A ``PublishError`` from the publisher is the endpoint's to answer (503).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from events.model import ChangeEvent
from foundation.http.edge import InvalidJson, validate_json
from foundation.validation import field_errors
from transport.publisher import EventPublisher

MIN_SECRET_BYTES = 16
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class WebhookRequest:
    """What an adapter sees: lower-cased headers, the raw body, the receiver's clock."""

    headers: Mapping[str, str]
    body: bytes
    now: float  # unix seconds


@dataclass(frozen=True)
class Accepted:
    events: tuple[ChangeEvent, ...]
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Ignored:
    reason: str


Outcome = Accepted | Ignored


class AdapterError(Exception):
    status = 400
    error = "bad_request"

    def __init__(self, detail: str, *, reason: str = "invalid",
                 errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        self.errors = errors


class Unauthorized(AdapterError):
    status = 401
    error = "unauthorized"


class MalformedBody(AdapterError):
    status = 400
    error = "invalid_json"


class InvalidPayload(AdapterError):
    status = 422
    error = "invalid_payload"


class NotThisLibrary(AdapterError):
    status = 403
    error = "forbidden"


class OwnedElsewhere(AdapterError):
    status = 409
    error = "owner_conflict"


class SourceUnavailable(AdapterError):
    status = 503
    error = "source_unavailable"


class Adapter(Protocol):
    @property
    def name(self) -> str:
        """The route's last part: ``/webhooks/<name>``."""

    @property
    def media_types(self) -> frozenset[str]:
        """Content types accepted (``application/json``); anything else is a 415."""

    def authenticate(self, request: WebhookRequest) -> None:
        """Raise ``Unauthorized`` unless the request carries the CMS's valid proof."""

    def handle(self, request: WebhookRequest, publisher: EventPublisher) -> Outcome:
        """Publish the request's events (blocking); raise an ``AdapterError`` to refuse."""


def check_secrets(what: str, secrets: Sequence[bytes]) -> tuple[bytes, ...]:
    """One secret, or two while rotating, each at least 16 bytes; the error names ``what``."""
    if not 1 <= len(secrets) <= 2:
        raise ValueError(f"{what}: need 1 or 2 secrets (2 during a rotation), got {len(secrets)}")
    for index, secret in enumerate(secrets):
        if len(secret) < MIN_SECRET_BYTES:
            raise ValueError(f"{what} secret #{index + 1} is {len(secret)} bytes; "
                             f"need at least {MIN_SECRET_BYTES}")
    return tuple(secrets)


def matches_any(candidates: Sequence[bytes], expected: Sequence[bytes]) -> bool:
    """True when any candidate equals any expected value; every pair is compared.

    ``hmac.compare_digest`` for each pair, without stopping at the first
    match, so the time taken tells neither which secret nor which position.
    """
    matched = False
    for want in expected:
        for got in candidates:
            matched = hmac.compare_digest(want, got) | matched
    return matched


def header(request: WebhookRequest, name: str) -> str | None:
    value = request.headers.get(name.lower())
    return value if value is None or value.strip() else None


def required_header(request: WebhookRequest, name: str) -> str:
    """The header's value; 401 ``missing`` when it is absent or blank."""
    value = header(request, name)
    if value is None:
        raise Unauthorized(f"no {name} header", reason="missing")
    return value


def parse_json(model: type[M], body: bytes) -> M:
    """``body`` as ``model``: 400 when it is not a JSON object, 422 with the fields otherwise.

    The errors name the field, never its value (it may be document content).
    """
    try:
        return validate_json(model, body)
    except InvalidJson as exc:
        raise MalformedBody(str(exc)) from exc
    except ValidationError as exc:
        errors = field_errors(exc)
        if errors and errors[0]["type"] == "model_type" and not errors[0]["loc"]:
            raise MalformedBody("body is JSON but not an object") from exc
        raise InvalidPayload(f"{len(errors)} field error(s) in the payload",
                             errors=errors) from exc
