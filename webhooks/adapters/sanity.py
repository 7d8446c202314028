"""Sanity GROQ-powered webhooks: ``sanity-webhook-signature: t=<ms>,v1=<base64url>``.

``v1`` is ``base64url(HMAC-SHA256(secret, f"{t}.{body}"))`` without padding,
``t`` the send time in epoch milliseconds (what ``@sanity/webhook`` signs and
checks). What is checked, in order:

- the header present and of that form (401 missing, malformed); ``t`` within
  the tolerance of now in either direction (401 stale: ``@sanity/webhook``
  itself checks no time, we do, so a captured request cannot be replayed
  later); ``v1`` equal to the signature under one configured secret, every
  pair compared in constant time (401 mismatch);
- the body a JSON object (400); ``sanity-operation`` ``create``/``update``
  (upsert) or ``delete`` (the body's ``operation`` when the projection has
  ``"operation": delta::operation()``: the header is not signed, the body
  is; a header that contradicts it is 422); any other operation is 202
  ignored; a draft
  (``drafts.``/``versions.`` ids) is 202 ignored, only published documents
  are the library.

**Version.** ``_rev`` is a random string, not ordered, so the version is
``_updatedAt`` as epoch milliseconds: Sanity stamps every mutation of a
document with it, from its own clock, at millisecond precision, and
mutations of one document are serialised, so a later revision has a later
stamp. A delete's body is the document as it was, so its ``_updatedAt`` is
that of the last upsert; its version is the signature's ``t`` instead (the
send time, after the deletion and so after every upsert of it).

**Fetch.** The webhook's projection decides what the body holds. When it
lacks the mapped body field or ``_updatedAt``, the document is read from the
API: ``GET {api}/v2021-06-07/data/doc/{dataset}/{id}`` with the read token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import urllib.parse
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from transport.publisher import EventPublisher
from webhooks.adapters.base import (
    Accepted,
    Ignored,
    InvalidPayload,
    Outcome,
    SourceUnavailable,
    Unauthorized,
    WebhookRequest,
    check_secrets,
    header,
    matches_any,
    required_header,
)
from webhooks.adapters.cms_common import (
    DeliveryApi,
    FieldMapping,
    checked_id,
    delete_event,
    document_event,
    epoch_ms,
    from_ms,
    lookup,
    section_api,
    section_mapping,
)
from webhooks.adapters.json_body import json_object
from webhooks.adapters.spec import AdapterContext, AdapterSection, AdapterSpec
from webhooks.config import TIMESTAMP_TOLERANCE_SECONDS

SIGNATURE_HEADER = "sanity-webhook-signature"
OPERATION_HEADER = "sanity-operation"
DATASET_HEADER = "sanity-dataset"
_SIGNATURE = re.compile(r"^t=(\d{1,16})[, ]+v1=([A-Za-z0-9_-]{1,100})$")
API_VERSION = "v2021-06-07"


def sign(secret: str, t_ms: int, body: bytes) -> str:
    """The header value Sanity sends (tests, ``webhook sign``)."""
    mac = hmac.new(secret.encode(), f"{t_ms}.".encode() + body, hashlib.sha256).digest()
    return f"t={t_ms},v1=" + base64.urlsafe_b64encode(mac).decode().rstrip("=")


class SanityAdapter:
    name = "sanity"
    media_types = frozenset({"application/json"})

    def __init__(self, secrets: Sequence[str], *, mapping: FieldMapping | None = None,
                 api: DeliveryApi | None = None, dataset: str | None = None,
                 tolerance_seconds: float = TIMESTAMP_TOLERANCE_SECONDS) -> None:
        check_secrets("sanity webhook", [s.encode() for s in secrets])
        if tolerance_seconds <= 0:
            raise ValueError(f"sanity webhook tolerance_seconds={tolerance_seconds} "
                             "must be positive")
        self._secrets = tuple(secrets)
        self._mapping = mapping or FieldMapping()
        self._api = api
        self._dataset = dataset
        self._tolerance = tolerance_seconds

    def authenticate(self, request: WebhookRequest) -> None:
        value = required_header(request, SIGNATURE_HEADER)
        found = _SIGNATURE.match(value.strip())
        if found is None:
            raise Unauthorized(f"{SIGNATURE_HEADER} is not t=<ms>,v1=<base64url>",
                               reason="malformed")
        t_ms = int(found.group(1))
        age = request.now - t_ms / 1000
        if abs(age) > self._tolerance:
            raise Unauthorized(f"{SIGNATURE_HEADER} t={t_ms} is {age:.0f}s from now; the "
                               f"tolerance is {self._tolerance:.0f}s", reason="stale")
        expected = [sign(s, t_ms, request.body).encode() for s in self._secrets]
        if not matches_any([f"t={t_ms},v1={found.group(2)}".encode()], expected):
            raise Unauthorized(f"{SIGNATURE_HEADER} matches no configured secret",
                               reason="mismatch")

    def handle(self, request: WebhookRequest, publisher: EventPublisher) -> Outcome:
        body = json_object(request.body)
        operation = _operation(body, header(request, OPERATION_HEADER))
        if operation not in ("create", "update", "delete"):
            return Ignored(f"{OPERATION_HEADER}={operation[:40]!r} is not create, update "
                           "or delete")
        document_id = body.get("_id") or header(request, "sanity-document-id")
        if not isinstance(document_id, str) or not document_id:
            raise InvalidPayload("the body has no _id (add _id to the webhook's projection)",
                                 errors=[{"loc": ["_id"], "msg": "missing", "type": "missing"}])
        if document_id.startswith(("drafts.", "versions.")):
            return Ignored(f"{document_id[:80]!r} is a draft; only published documents "
                           "are indexed")
        checked_id("sanity", document_id, "_id")
        received = datetime.fromtimestamp(request.now, UTC)
        if operation == "delete":
            t_ms = _sent_at_ms(request)
            updated = body.get("_updatedAt")
            version = max(t_ms, epoch_ms(updated, "_updatedAt") if updated else 0)
            event = delete_event("sanity", document_id, version, from_ms(t_ms),
                                 received_at=received)
        else:
            record = body
            if lookup(body, self._mapping.body) is None or "_updatedAt" not in body:
                fetched = self._fetch(document_id, header(request, DATASET_HEADER))
                if fetched is None:
                    return Ignored(f"{document_id[:80]!r} is no longer in the dataset; "
                                   "its deletion follows")
                record = fetched
            version = epoch_ms(record.get("_updatedAt"), "_updatedAt")
            event = document_event("sanity", document_id, version, from_ms(version), record,
                                   mapping=self._mapping, received_at=received)
        publisher.publish(event)
        return Accepted((event,))

    def _fetch(self, document_id: str, dataset_header: str | None) -> dict[str, Any] | None:
        dataset = self._dataset or dataset_header
        if self._api is None or not dataset:
            raise InvalidPayload(
                f"the body lacks the body field {self._mapping.body!r} or _updatedAt, and no "
                "Sanity API is configured to read the document (POLICY_INDEXER_WEBHOOK_SANITY"
                "_API_URL, _DATASET) — or add the fields to the webhook's projection")
        path = (f"/{API_VERSION}/data/doc/{urllib.parse.quote(dataset, safe='')}/"
                f"{urllib.parse.quote(document_id, safe='')}")
        answer = self._api.get(path)
        if answer is None:
            return None
        documents = answer.get("documents") if isinstance(answer, dict) else None
        if not isinstance(documents, list):
            raise SourceUnavailable(f"sanity API {path} answered without 'documents'",
                                    reason="sanity")
        for doc in documents:
            if isinstance(doc, dict) and doc.get("_id") == document_id:
                return doc
        return None


def _sent_at_ms(request: WebhookRequest) -> int:
    """The signature's ``t`` (``authenticate`` has checked the header's form)."""
    found = _SIGNATURE.match(request.headers.get(SIGNATURE_HEADER, "").strip())
    if found is None:
        raise Unauthorized(f"{SIGNATURE_HEADER} is not t=<ms>,v1=<base64url>",
                           reason="malformed")
    return int(found.group(1))


def _operation(body: dict[str, Any], from_header: str | None) -> str:
    """The body's ``operation`` (``delta::operation()`` in the projection), else the header's.

    Sanity signs the body only, so the ``sanity-operation`` header could be
    changed on a captured request within the tolerance; a projection that
    carries the operation closes that, and a header that contradicts it is refused.
    """
    signed = body.get("operation")
    if signed is not None and not isinstance(signed, str):
        raise InvalidPayload("the body's operation is not a string")
    if signed is not None and from_header is not None and signed != from_header:
        raise InvalidPayload(f"{OPERATION_HEADER}={from_header[:20]!r} contradicts the body's "
                             f"operation {signed[:20]!r}")
    operation = signed or from_header
    if operation is None:
        raise InvalidPayload(f"no {OPERATION_HEADER} header (create, update or delete)")
    return operation


def _from_settings(section: AdapterSection, context: AdapterContext) -> SanityAdapter:
    return SanityAdapter(
        section.plain("secrets"), mapping=section_mapping(section),
        api=section_api("sanity", section, context), dataset=section["dataset"],
        tolerance_seconds=context.tolerance_seconds)


SPEC = AdapterSpec("sanity", "secrets", _from_settings)
