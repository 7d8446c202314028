"""Standard Webhooks (standardwebhooks.com): our own payload through a generic relay.

Several platforms sign this way (Svix, and relays that forward a CMS's
events). Headers::

    webhook-id: msg_2KWPBgLlAfxdpx2AI54pPJ85f4W
    webhook-timestamp: 1764446400
    webhook-signature: v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4= v1,<another>

``v1`` is ``base64(HMAC-SHA256(key, f"{id}.{timestamp}.".encode() + body))``
where ``key`` is the base64 part of the secret ``whsec_<base64>``. A header
may carry several signatures (space-separated; the sender's rotation), and we
may hold two secrets (ours). What is checked, in order:

- the three headers present (401 missing), the timestamp an integer and the
  signature list well formed (401 malformed), the timestamp within the
  tolerance of now in either direction (401 stale: a replay, or a bad clock);
- one ``v1`` matches one secret, every pair compared in constant time (401 mismatch);
- a ``webhook-id`` accepted within the tolerance window is answered 202
  ``duplicate`` and not published again (the spec's replay advice: a relay's
  retry reuses the id);
- the body is the version-1 payload of ``POST /webhooks/cms`` (400, 422).

The PyPI package ``standardwebhooks`` signs requests in the tests; it is not
used here because it reads the wall clock with a fixed 5-minute tolerance and
answers every failure with one message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import threading
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic import ValidationError

from foundation.validation import field_errors
from transport.publisher import EventPublisher
from webhooks.adapters.base import (
    Accepted,
    Ignored,
    InvalidPayload,
    Outcome,
    Unauthorized,
    WebhookRequest,
    check_secrets,
    header,
    matches_any,
    parse_json,
)
from webhooks.adapters.spec import AdapterContext, AdapterSection, AdapterSpec
from webhooks.config import TIMESTAMP_TOLERANCE_SECONDS
from webhooks.payload import WebhookPayload

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
SECRET_PREFIX = "whsec_"  # noqa: S105 (the format's prefix)
_MAX_SIGNATURE_CHARS = 4096
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


def decode_secret(secret: str) -> bytes:
    """The HMAC key of ``whsec_<base64>`` (the prefix is optional); ValueError names the problem."""
    raw = secret.removeprefix(SECRET_PREFIX)
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"standard webhook secret is not whsec_<base64>: {exc}") from exc


def sign(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    """One ``v1,<base64>`` entry (``policy-indexer webhook sign``, tests)."""
    mac = hmac.new(key, f"{msg_id}.{timestamp}.".encode(), hashlib.sha256)
    mac.update(body)
    return "v1," + base64.b64encode(mac.digest()).decode("ascii")


class StandardWebhooksAdapter:
    name = "standard"
    media_types = frozenset({"application/json"})

    def __init__(self, keys: Sequence[bytes], *,
                 tolerance_seconds: float = TIMESTAMP_TOLERANCE_SECONDS) -> None:
        self._keys = check_secrets("standard webhook", keys)
        if tolerance_seconds <= 0:
            raise ValueError(f"standard webhook tolerance_seconds={tolerance_seconds} "
                             "must be positive")
        self._tolerance = tolerance_seconds
        self._accepted: dict[str, float] = {}  # webhook-id -> its timestamp
        self._lock = threading.Lock()

    def authenticate(self, request: WebhookRequest) -> None:
        msg_id = header(request, ID_HEADER)
        stamp = header(request, TIMESTAMP_HEADER)
        signatures = header(request, SIGNATURE_HEADER)
        missing = [n for n, v in ((ID_HEADER, msg_id), (TIMESTAMP_HEADER, stamp),
                                  (SIGNATURE_HEADER, signatures)) if v is None]
        if missing or msg_id is None or stamp is None or signatures is None:
            raise Unauthorized(f"no {', '.join(missing)} header", reason="missing")
        if not stamp.isascii() or not stamp.strip().isdigit():
            raise Unauthorized(f"{TIMESTAMP_HEADER}={stamp[:20]!r} is not unix seconds",
                               reason="malformed")
        candidates = self._candidates(signatures)
        age = request.now - int(stamp)
        if abs(age) > self._tolerance:
            raise Unauthorized(f"{TIMESTAMP_HEADER}={stamp} is {age:.0f}s from now; the "
                               f"tolerance is {self._tolerance:.0f}s", reason="stale")
        expected = [base64.b64decode(sign(k, msg_id, int(stamp), request.body)[3:])
                    for k in self._keys]
        if not matches_any(candidates, expected):
            raise Unauthorized(f"no v1 signature in {SIGNATURE_HEADER} matches a configured "
                               "secret", reason="mismatch")

    @staticmethod
    def _candidates(signatures: str) -> list[bytes]:
        if len(signatures) > _MAX_SIGNATURE_CHARS:
            raise Unauthorized(f"{SIGNATURE_HEADER} is {len(signatures)} characters long",
                               reason="malformed")
        candidates = []
        for item in signatures.split():
            version, sep, value = item.partition(",")
            if not sep:
                raise Unauthorized(f"{SIGNATURE_HEADER} entry {item[:20]!r} is not "
                                   "<version>,<base64>", reason="malformed")
            if version == "v1":
                if not _BASE64.match(value):
                    raise Unauthorized(f"{SIGNATURE_HEADER} v1 value is not base64",
                                       reason="malformed")
                candidates.append(base64.b64decode(value))
        if not candidates:
            raise Unauthorized(f"{SIGNATURE_HEADER} has no v1 signature", reason="malformed")
        return candidates

    def handle(self, request: WebhookRequest, publisher: EventPublisher) -> Outcome:
        msg_id = request.headers[ID_HEADER]
        with self._lock:
            self._accepted = {k: t for k, t in self._accepted.items()
                              if request.now - t <= 2 * self._tolerance}
            if msg_id in self._accepted:
                return Ignored(f"duplicate: {ID_HEADER} {msg_id[:60]!r} was accepted already")
        payload = parse_json(WebhookPayload, request.body)
        try:
            event = payload.to_change_event(received_at=datetime.fromtimestamp(request.now, UTC))
        except ValidationError as exc:
            raise InvalidPayload("the payload makes no valid change event",
                                 errors=field_errors(exc)) from exc
        publisher.publish(event)
        with self._lock:
            self._accepted[msg_id] = float(request.headers[TIMESTAMP_HEADER])
        return Accepted((event,))


def _from_settings(section: AdapterSection, context: AdapterContext) -> StandardWebhooksAdapter:
    keys = [decode_secret(secret) for secret in section.plain("secrets")]
    return StandardWebhooksAdapter(keys, tolerance_seconds=context.tolerance_seconds)


def _signed_headers(secret: str, body: bytes, event: str, now: float) -> dict[str, str]:
    key = decode_secret(secret)
    msg_id = f"msg_{uuid.uuid4().hex}"
    return {ID_HEADER: msg_id, TIMESTAMP_HEADER: str(int(now)),
            SIGNATURE_HEADER: sign(key, msg_id, int(now), body)}


SPEC = AdapterSpec("standard", "secrets", _from_settings, sign=_signed_headers)
