"""Contentful webhooks with request verification (``x-contentful-signature``).

Contentful signs a webhook request with the space's signing secret (64
characters) as ``@contentful/node-apps-toolkit`` does::

    x-contentful-signed-headers: x-contentful-signed-headers,x-contentful-timestamp
    x-contentful-timestamp: 1764446400000            (epoch milliseconds)
    x-contentful-signature: hex(HMAC-SHA256(secret, "POST\\n<path>\\n<k:v;...>\\n<body>"))

where ``<k:v;...>`` are the signed headers, lower-cased, trimmed and sorted,
and ``<path>`` the path of the webhook URL configured in Contentful (behind
a proxy it differs from ours, so it is a setting). What is checked, in order:

- the three headers present and well formed, the signed headers including the
  timestamp and themselves and all present (401 missing, malformed); the
  timestamp within the tolerance of now (401 stale); the signature equal to
  the one under one configured secret, in constant time (401 mismatch);
- the body a JSON object (400); ``X-Contentful-Topic``
  ``ContentManagement.Entry.publish`` (upsert), ``.unpublish`` or ``.delete``
  (delete); every other topic (save, auto_save, archive, assets, content
  types) and an entry of a content type not configured is 202 ignored.

**Version.** An entry's ``sys.version`` counts its saves and publishes, but
the unpublish and delete payloads are tombstones (``DeletedEntry``) with
``revision`` and ``deletedAt`` and no ``version``; a deletion could not be
ordered against the publishes by it. So the version is a time, as for Sanity:
the publish's ``sys.publishedAt`` (or ``updatedAt``, whichever is later) and
the tombstone's ``deletedAt``, as epoch milliseconds, both stamped by
Contentful when the change was made.

**Fields.** ``fields`` holds each field per locale; the configured locale's
value is taken. Without ``fields`` (a custom payload) the entry is read from
the Delivery API: ``GET {cdn}/spaces/{space}/environments/{env}/entries/{id}``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import urllib.parse
from collections.abc import Mapping, Sequence
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
    header,
    matches_any,
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

SIGNATURE_HEADER = "x-contentful-signature"
SIGNED_HEADERS_HEADER = "x-contentful-signed-headers"
TIMESTAMP_HEADER = "x-contentful-timestamp"
TOPIC_HEADER = "x-contentful-topic"
MEDIA_TYPE = "application/vnd.contentful.management.v1+json"
SECRET_CHARS = 64
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_UPSERT, _DELETE = {"publish"}, {"unpublish", "delete"}


def canonical_path(path: str) -> str:
    """The path as the toolkit normalises it: the query escaped, then ``encodeURI``."""
    pathname, _, search = path.partition("?")
    if search:
        pathname += "?" + urllib.parse.quote(search, safe="-_.!~*'()")
    return urllib.parse.quote(pathname, safe="-_.!~*'();/?:@&=+$,#%")


def sign(secret: str, path: str, headers: Mapping[str, str], body: bytes) -> str:
    """The hex signature of a POST to ``path`` with the signed ``headers`` (name -> value)."""
    signed = sorted((k.lower().strip(), v.strip()) for k, v in headers.items())
    text = "\n".join(["POST", canonical_path(path), ";".join(f"{k}:{v}" for k, v in signed)])
    return hmac.new(secret.encode(), text.encode() + b"\n" + body, hashlib.sha256).hexdigest()


class ContentfulAdapter:
    name = "contentful"
    media_types = frozenset({MEDIA_TYPE, "application/json"})

    def __init__(self, secrets: Sequence[str], *, signed_path: str = "/webhooks/contentful",
                 mapping: FieldMapping | None = None, locale: str = "en-US",
                 content_types: Sequence[str] = (), api: DeliveryApi | None = None,
                 tolerance_seconds: float = TIMESTAMP_TOLERANCE_SECONDS) -> None:
        if not 1 <= len(secrets) <= 2:
            raise ValueError("contentful webhook: need 1 or 2 signing secrets (2 during a "
                             f"rotation), got {len(secrets)}")
        for index, secret in enumerate(secrets):
            if len(secret) != SECRET_CHARS:
                raise ValueError(f"contentful signing secret #{index + 1} is {len(secret)} "
                                 f"characters; Contentful's are {SECRET_CHARS}")
        if not signed_path.startswith("/"):
            raise ValueError(f"contentful signed_path {signed_path!r} must start with '/'")
        if tolerance_seconds <= 0:
            raise ValueError(f"contentful tolerance_seconds={tolerance_seconds} must be positive")
        self._secrets = tuple(secrets)
        self._path = signed_path
        self._mapping = mapping or FieldMapping()
        self._locale = locale
        self._content_types = frozenset(content_types)
        self._api = api
        self._tolerance = tolerance_seconds

    def authenticate(self, request: WebhookRequest) -> None:
        values = {n: header(request, n) for n in
                  (SIGNATURE_HEADER, SIGNED_HEADERS_HEADER, TIMESTAMP_HEADER)}
        missing = [n for n, v in values.items() if v is None]
        if missing:
            raise Unauthorized(f"no {', '.join(missing)} header", reason="missing")
        signature = str(values[SIGNATURE_HEADER]).strip()
        stamp = str(values[TIMESTAMP_HEADER]).strip()
        names = [n.strip().lower() for n in str(values[SIGNED_HEADERS_HEADER]).split(",")]
        if not _HEX64.match(signature):
            raise Unauthorized(f"{SIGNATURE_HEADER} is not 64 lowercase hex", reason="malformed")
        if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= 16):
            raise Unauthorized(f"{TIMESTAMP_HEADER}={stamp[:20]!r} is not epoch milliseconds",
                               reason="malformed")
        if TIMESTAMP_HEADER not in names or SIGNED_HEADERS_HEADER not in names:
            raise Unauthorized(f"{SIGNED_HEADERS_HEADER} must name {TIMESTAMP_HEADER} and "
                               "itself", reason="malformed")
        absent = [n for n in names if n not in request.headers]
        if absent or len(names) > 50:
            raise Unauthorized(f"signed header(s) {absent[:5]} not in the request",
                               reason="malformed")
        age = request.now - int(stamp) / 1000
        if abs(age) > self._tolerance:
            raise Unauthorized(f"{TIMESTAMP_HEADER}={stamp} is {age:.0f}s from now; the "
                               f"tolerance is {self._tolerance:.0f}s", reason="stale")
        signed = {n: request.headers[n] for n in names}
        expected = [sign(s, self._path, signed, request.body).encode() for s in self._secrets]
        if not matches_any([signature.encode()], expected):
            raise Unauthorized(f"{SIGNATURE_HEADER} matches no configured secret",
                               reason="mismatch")

    def handle(self, request: WebhookRequest, publisher: EventPublisher) -> Outcome:
        topic = header(request, TOPIC_HEADER)
        if topic is None:
            raise InvalidPayload(f"no {TOPIC_HEADER} header (ContentManagement.Entry.publish...)")
        parts = topic.split(".")
        if len(parts) != 3 or parts[1] != "Entry" or parts[2] not in _UPSERT | _DELETE:
            return Ignored(f"{TOPIC_HEADER}={topic[:80]!r}: only Entry publish, unpublish "
                           "and delete change the library")
        body = json_object(request.body)
        sys = body.get("sys")
        if not isinstance(sys, dict) or not isinstance(sys.get("id"), str) or not sys["id"]:
            raise InvalidPayload("the body has no sys.id", errors=[
                {"loc": ["sys", "id"], "msg": "missing", "type": "missing"}])
        entry_id: str = checked_id("contentful", sys["id"], "sys.id")
        wanted = "DeletedEntry" if parts[2] in _DELETE else "Entry"
        if sys.get("type", wanted) != wanted:  # the topic header is not always signed
            raise InvalidPayload(f"{TOPIC_HEADER}={topic[:80]!r} with a body of sys.type "
                                 f"{str(sys.get('type'))[:30]!r}; want {wanted!r}")
        content_type = lookup(sys, "contentType.sys.id")
        if self._content_types and content_type not in self._content_types:
            return Ignored(f"content type {str(content_type)[:60]!r} is not one of the "
                           "library's")
        received = datetime.fromtimestamp(request.now, UTC)
        if parts[2] in _DELETE:
            version = epoch_ms(sys.get("deletedAt") or sys.get("updatedAt"), "sys.deletedAt")
            event = delete_event("contentful", entry_id, version, from_ms(version),
                                 received_at=received)
        else:
            entry = body if isinstance(body.get("fields"), dict) else self._fetch(sys)
            if entry is None:
                return Ignored(f"entry {entry_id!r} is not published any more; its unpublish "
                               "follows")
            version = self._published_ms(entry.get("sys", sys))
            record = {name: self._localised(value) for name, value in entry["fields"].items()}
            event = document_event("contentful", entry_id, version, from_ms(version), record,
                                   mapping=self._mapping, received_at=received, prefix="fields.")
        publisher.publish(event)
        return Accepted((event,))

    @staticmethod
    def _published_ms(sys: Mapping[str, Any]) -> int:
        stamps = [epoch_ms(sys[k], f"sys.{k}") for k in ("publishedAt", "updatedAt")
                  if sys.get(k) is not None]
        if not stamps:
            return epoch_ms(None, "sys.updatedAt")
        return max(stamps)

    def _localised(self, value: Any) -> Any:
        """The locale's value of a management-API field (``{"en-US": ...}``), else as is."""
        if isinstance(value, dict) and self._locale in value and "nodeType" not in value:
            return value[self._locale]
        return value

    def _fetch(self, sys: Mapping[str, Any]) -> dict[str, Any] | None:
        if self._api is None:
            raise InvalidPayload("the body has no fields and no Contentful Delivery API is "
                                 "configured (POLICY_INDEXER_WEBHOOK_CONTENTFUL_API_URL, "
                                 "_API_TOKEN)")
        space = lookup(sys, "space.sys.id")
        environment = lookup(sys, "environment.sys.id") or "master"
        if not isinstance(space, str):
            raise InvalidPayload("the body has no sys.space.sys.id to fetch the entry from")
        quote = urllib.parse.quote
        answer = self._api.get(
            f"/spaces/{quote(space, safe='')}/environments/{quote(str(environment), safe='')}"
            f"/entries/{quote(str(sys['id']), safe='')}", {"locale": self._locale})
        if answer is None:
            return None
        if not isinstance(answer, dict) or not isinstance(answer.get("fields"), dict):
            raise SourceUnavailable("the Contentful Delivery API's entry has no fields",
                                    reason="contentful")
        return answer


def _from_settings(section: AdapterSection, context: AdapterContext) -> ContentfulAdapter:
    return ContentfulAdapter(
        section.plain("secrets"), signed_path=section["signed_path"],
        mapping=section_mapping(section), locale=section["locale"],
        content_types=section["content_types"], api=section_api("contentful", section, context),
        tolerance_seconds=context.tolerance_seconds)


SPEC = AdapterSpec("contentful", "secrets", _from_settings)
