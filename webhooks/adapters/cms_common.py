"""What the Contentful, Sanity and Strapi adapters share: fields, versions, fetch, events.

- ``FieldMapping``: which field of the CMS's document is the title, the body,
  the scope, the validity dates and the access labels (dotted paths, so
  ``seo.title`` reads a nested object). Configurable per CMS because every
  content model names them differently.
- ``epoch_ms``: a CMS timestamp as epoch milliseconds, the version of the
  adapters whose CMS has no integer version (Sanity's ``_rev`` is a random
  string; Strapi has none; Contentful's tombstones carry no ``sys.version``).
  One CMS stamps every change of a document from its own clock at
  millisecond precision, and edits of one document are serialised by the CMS,
  so a later change has a later stamp: the order the version guard needs.
- ``DeliveryApi``: the CMS's read API over httpx (timeouts, a bearer token),
  for payloads that lack the content or the metadata. Its failures are 503s
  (the CMS retries the webhook), a 404 is "not there".
- ``document_event``: a document record (the payload's or the fetched one)
  through the mapping into an upsert ``ChangeEvent``; rich text becomes
  Markdown (``richtext``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime
from typing import Any

import httpx
from pydantic import ValidationError

from events.model import Action, ChangeEvent, EventMetadata, check_document_id
from foundation.validation import field_errors
from webhooks.adapters.base import InvalidPayload, SourceUnavailable
from webhooks.adapters.richtext import (
    RichTextError,
    contentful_to_markdown,
    portable_text_to_markdown,
    strapi_blocks_to_markdown,
)
from webhooks.adapters.spec import AdapterContext, AdapterSection


@dataclass(frozen=True)
class FieldMapping:
    title: str = "title"
    body: str = "body"
    scope: str = "scope"
    valid_from: str = "validFrom"
    valid_to: str = "validTo"
    access_labels: str = "accessLabels"

    @classmethod
    def from_settings(cls, what: str, values: Mapping[str, str]) -> FieldMapping:
        """The defaults with ``values`` over them; an unknown key or empty path is a ValueError."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{what}: unknown field(s) {unknown}; the mapped fields are "
                             f"{sorted(known)}")
        empty = sorted(k for k, v in values.items() if not str(v).strip())
        if empty:
            raise ValueError(f"{what}: empty path for {empty}")
        return cls(**{k: str(v).strip() for k, v in values.items()})


def lookup(record: Mapping[str, Any], path: str) -> Any:
    """``record["a"]["b"]`` for ``"a.b"``; None when any part is missing."""
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def epoch_ms(value: Any, where: str) -> int:
    """An RFC 3339 timestamp with a zone as epoch milliseconds; 422 naming ``where`` otherwise."""
    if not isinstance(value, str):
        raise InvalidPayload(f"{where} is missing or not a timestamp string",
                             errors=[{"loc": where.split("."), "msg": "timestamp required",
                                      "type": "missing"}])
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidPayload(f"{where}={value[:40]!r} is not an RFC 3339 timestamp") from exc
    if moment.tzinfo is None:
        raise InvalidPayload(f"{where}={value[:40]!r} has no time zone")
    return int(moment.timestamp() * 1000)


def checked_id(cms: str, document_id: str, where: str) -> str:
    """``document_id`` if the change event takes it (``events.model.check_document_id``),
    else 422 at ``where``, before anything is fetched or published."""
    try:
        return check_document_id(document_id)
    except ValueError as exc:
        raise InvalidPayload(f"{cms} document id {document_id[:80]!r} {exc}", errors=[
            {"loc": where.split("."), "msg": f"Value error, {exc}",
             "type": "value_error"}]) from exc


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def body_markdown(value: Any, where: str) -> str:
    """The body field as Markdown: a string as is, Contentful rich text, Portable Text, blocks."""
    try:
        if isinstance(value, str):
            return value
        if isinstance(value, Mapping) and value.get("nodeType") == "document":
            return contentful_to_markdown(value)
        if isinstance(value, list):
            first = value[0] if value else {}
            if isinstance(first, Mapping) and "_type" not in first and "type" in first:
                return strapi_blocks_to_markdown(value)
            return portable_text_to_markdown(value)
    except RichTextError as exc:
        raise InvalidPayload(f"{where}: {exc}") from exc
    raise InvalidPayload(f"{where} is {type(value).__name__}: not Markdown, Contentful rich "
                         "text, Portable Text or Strapi blocks")


def _labels(value: Any, where: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InvalidPayload(f"{where} is {type(value).__name__}; want a string or a list of strings")


def _date(value: Any, where: str) -> date | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return date.fromisoformat(value[:10])
        except ValueError:
            pass
    raise InvalidPayload(f"{where}={str(value)[:40]!r} is not a date (YYYY-MM-DD...)")


def document_event(cms: str, document_id: str, version: int, changed_at: datetime,
                   record: Mapping[str, Any], *, mapping: FieldMapping,
                   received_at: datetime, source_path: str | None = None,
                   prefix: str = "") -> ChangeEvent:
    """The upsert of ``record`` (names in errors are ``prefix`` + the mapped path)."""
    body = lookup(record, mapping.body)
    if body is None:
        raise InvalidPayload(f"the document has no body field {prefix + mapping.body!r} "
                             "(set the field mapping)",
                             errors=[{"loc": (prefix + mapping.body).split("."),
                                      "msg": "body field missing", "type": "missing"}])
    title = lookup(record, mapping.title)
    try:
        metadata = EventMetadata(
            title=title if isinstance(title, str) and title.strip() else None,
            source_path=source_path,
            scope=_labels(lookup(record, mapping.scope), prefix + mapping.scope),
            valid_from=_date(lookup(record, mapping.valid_from), prefix + mapping.valid_from),
            valid_to=_date(lookup(record, mapping.valid_to), prefix + mapping.valid_to),
            access_labels=_labels(lookup(record, mapping.access_labels),
                                  prefix + mapping.access_labels),
        )
        return ChangeEvent(
            event_id=f"{cms}:{document_id}@{version}:upsert", document_id=document_id,
            action=Action.UPSERT, version=version, changed_at=changed_at,
            received_at=received_at, content_type="text/markdown",
            content=body_markdown(body, prefix + mapping.body), metadata=metadata,
            source=cms)
    except ValidationError as exc:
        raise InvalidPayload(f"{cms} document {document_id!r} makes no valid change event",
                             errors=field_errors(exc)) from exc


def delete_event(cms: str, document_id: str, version: int, changed_at: datetime, *,
                 received_at: datetime) -> ChangeEvent:
    try:
        return ChangeEvent(event_id=f"{cms}:{document_id}@{version}:delete",
                           document_id=document_id, action=Action.DELETE, version=version,
                           changed_at=changed_at, received_at=received_at, source=cms)
    except ValidationError as exc:
        raise InvalidPayload(f"{cms} deletion of {document_id!r} makes no valid change event",
                             errors=field_errors(exc)) from exc




class DeliveryApi:
    """GET JSON from a CMS's read API: ``base_url`` + path, ``Authorization: Bearer <token>``."""

    def __init__(self, cms: str, base_url: str, *, token: str | None = None,
                 timeout_seconds: float = 10.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"{cms} delivery API base URL {base_url!r} is not http(s)://...")
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.cms = cms
        self.base_url = base_url.rstrip("/")
        self._client = httpx.Client(headers=headers, timeout=timeout_seconds,
                                    transport=transport)

    def get(self, path: str, params: Mapping[str, str] | None = None) -> Any | None:
        """The JSON answer, or None on 404; 503 (``SourceUnavailable``) on anything else."""
        url = self.base_url + path
        try:
            response = self._client.get(url, params=params)
        except httpx.HTTPError as exc:
            raise SourceUnavailable(f"{self.cms} API {url} cannot be reached: {exc!r}",
                                    reason=self.cms) from exc
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise SourceUnavailable(f"{self.cms} API {url} answered {response.status_code}",
                                    reason=self.cms)
        try:
            return response.json()
        except ValueError as exc:
            raise SourceUnavailable(f"{self.cms} API {url} answered with no JSON",
                                    reason=self.cms) from exc

    def close(self) -> None:
        self._client.close()


def section_mapping(section: AdapterSection) -> FieldMapping:
    """The field mapping of an adapter's ``fields`` setting, errors naming that setting."""
    return FieldMapping.from_settings(section.env("fields"), section["fields"])


def section_api(cms: str, section: AdapterSection, context: AdapterContext) -> DeliveryApi | None:
    """The CMS's read API of an adapter's ``api_url`` and ``api_token``; None without a URL."""
    url: str | None = section["api_url"]
    if url is None:
        return None
    return DeliveryApi(cms, url, token=section.secret("api_token"),
                       timeout_seconds=context.api_timeout_seconds)
