"""Strapi webhooks: a token in the ``Authorization`` header.

Strapi signs nothing: its webhook settings take custom headers, and the
token is sent as ``Authorization: Bearer <token>`` on every call. What is
checked, in order:

- the header present and ``Bearer <token>`` (401 missing, malformed); the
  token equal to one configured token, in constant time (401 mismatch). The
  scheme has no timestamp, so no replay window: a replayed event carries the
  same version, which the version guard makes harmless (TLS matters more);
- the body a JSON object (400) with ``event``, ``model`` and ``entry`` (422);
- ``entry.publish`` (upsert), ``entry.unpublish`` and ``entry.delete``
  (delete); ``entry.create``/``entry.update`` upsert only a published entry
  (``publishedAt`` set: a content type without draft & publish), a draft's
  are 202 ignored; ``media.*`` and every other event, and a model not
  configured, are 202 ignored.

**Ids and versions.** The document id is ``<model>/<documentId>`` (Strapi 5;
``id`` on Strapi 4): ids are per model. The version is ``entry.updatedAt``
(or ``publishedAt``, whichever is later) as epoch milliseconds. A delete's
entry is the entry as it was, so its stamps are the last upsert's; its
version is the event's own ``createdAt`` (when Strapi emitted it, after the
deletion) when that is later.

**Fetch.** When the entry lacks the mapped body field (a component or
relation the payload leaves out), it is read from the REST API:
``GET {api}{path}/{documentId}?populate=*`` with the API token, where
``path`` is the model's (``{"policy": "/api/policies"}``).
"""

from __future__ import annotations

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
    check_secrets,
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

AUTH_HEADER = "Authorization"
_UPSERT = {"entry.publish"}
_UPSERT_IF_PUBLISHED = {"entry.create", "entry.update"}
_DELETE = {"entry.unpublish", "entry.delete"}


class StrapiAdapter:
    name = "strapi"
    media_types = frozenset({"application/json"})

    def __init__(self, tokens: Sequence[bytes], *, mapping: FieldMapping | None = None,
                 api: DeliveryApi | None = None,
                 api_paths: Mapping[str, str] | None = None) -> None:
        self._expected = [b"Bearer " + t for t in check_secrets("strapi webhook", tokens)]
        self._mapping = mapping or FieldMapping()
        self._api = api
        self._paths = dict(api_paths or {})
        for model, path in self._paths.items():
            if not path.startswith("/"):
                raise ValueError(f"strapi API path of model {model!r} is {path!r}; it must "
                                 "start with '/' (e.g. /api/policies)")

    def authenticate(self, request: WebhookRequest) -> None:
        value = required_header(request, AUTH_HEADER)
        if not value.startswith("Bearer ") or not value[7:].strip():
            raise Unauthorized(f"{AUTH_HEADER} is not 'Bearer <token>'", reason="malformed")
        if not matches_any([value.strip().encode()], self._expected):
            raise Unauthorized(f"{AUTH_HEADER} matches no configured token", reason="mismatch")

    def handle(self, request: WebhookRequest, publisher: EventPublisher) -> Outcome:
        body = json_object(request.body)
        event, model, entry = body.get("event"), body.get("model"), body.get("entry")
        if not isinstance(event, str) or not isinstance(model, str) or not isinstance(entry,
                                                                                        dict):
            problems = [name for name, value, kind in (
                ("event", event, str), ("model", model, str), ("entry", entry, dict))
                if not isinstance(value, kind)]
            raise InvalidPayload(f"the body lacks {', '.join(problems)}", errors=[
                {"loc": [p], "msg": "missing or of the wrong type", "type": "missing"}
                for p in problems])
        if event not in _UPSERT | _UPSERT_IF_PUBLISHED | _DELETE:
            return Ignored(f"event {event[:60]!r} does not change the library")
        if self._paths and model not in self._paths:
            return Ignored(f"model {model[:60]!r} is not one of the library's")
        key = entry.get("documentId", entry.get("id"))
        if not isinstance(key, str | int) or isinstance(key, bool) or key == "":
            raise InvalidPayload("the entry has no documentId (or id)", errors=[
                {"loc": ["entry", "documentId"], "msg": "missing", "type": "missing"}])
        document_id = checked_id("strapi", f"{model}/{key}", "entry.documentId")
        received = datetime.fromtimestamp(request.now, UTC)
        if event in _DELETE:
            stamps = [_stamp(entry, "updatedAt"), _stamp(entry, "publishedAt"),
                      _stamp(body, "createdAt", "createdAt")]
            version = _latest(stamps, "createdAt")
            change = delete_event("strapi", document_id, version, from_ms(version),
                                  received_at=received)
        else:
            if event in _UPSERT_IF_PUBLISHED and not entry.get("publishedAt"):
                return Ignored(f"{event}: entry {document_id[:80]!r} is a draft")
            record: dict[str, Any] = entry
            if lookup(entry, self._mapping.body) is None:
                fetched = self._fetch(model, str(key))
                if fetched is None:
                    return Ignored(f"entry {document_id[:80]!r} is not published any more")
                record = fetched
            version = _latest([_stamp(record, "updatedAt"), _stamp(record, "publishedAt")],
                              "entry.updatedAt")
            change = document_event("strapi", document_id, version, from_ms(version), record,
                                    mapping=self._mapping, received_at=received,
                                    prefix="entry.")
        publisher.publish(change)
        return Accepted((change,))

    def _fetch(self, model: str, key: str) -> dict[str, Any] | None:
        path = self._paths.get(model)
        if self._api is None or path is None:
            raise InvalidPayload(
                f"the entry has no body field {self._mapping.body!r} and no Strapi API path "
                f"is configured for model {model!r} (POLICY_INDEXER_WEBHOOK_STRAPI_API_URL, "
                "_API_PATHS)")
        answer = self._api.get(f"{path}/{urllib.parse.quote(key, safe='')}",
                               {"populate": "*"})
        if answer is None:
            return None
        data = answer.get("data") if isinstance(answer, dict) else None
        if isinstance(data, dict) and isinstance(data.get("attributes"), dict):  # Strapi 4
            data = {"id": data.get("id"), **data["attributes"]}
        if not isinstance(data, dict):
            raise SourceUnavailable(f"strapi API {path}/{key} answered without 'data'",
                                    reason="strapi")
        return data


def _stamp(record: Mapping[str, Any], name: str, where: str | None = None) -> int | None:
    value = record.get(name)
    return None if value is None else epoch_ms(value, where or f"entry.{name}")


def _latest(stamps: Sequence[int | None], required: str) -> int:
    """The latest of the stamps present; 422 naming ``required`` when there is none."""
    present = [s for s in stamps if s is not None]
    return max(present) if present else epoch_ms(None, required)


def _from_settings(section: AdapterSection, context: AdapterContext) -> StrapiAdapter:
    return StrapiAdapter(
        section.utf8("tokens"), mapping=section_mapping(section),
        api=section_api("strapi", section, context), api_paths=section["api_paths"])


SPEC = AdapterSpec("strapi", "tokens", _from_settings)
