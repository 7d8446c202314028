"""A generic HTTP JSON CMS API as a source.

The API this expects (any CMS can be fronted by a small adapter that serves it)::

    GET {base_url}/documents?limit=500[&cursor=...]
      200 {"documents": [{"id": "refund", "version": 3,
                          "changed_at": "2024-05-01T10:00:00Z", "deleted": false}, ...],
           "next_cursor": "opaque string, or null on the last page"}
    GET {base_url}/documents/{id}                 (id percent-encoded, "/" included)
      200 {"id": "refund", "version": 3, "changed_at": "...", "content": "# ...",
           "content_type": "text/markdown", "metadata": {"title": "..."}}
      404 or 410 when the document does not exist or is deleted

``document_id`` is accepted in place of ``id``; ``deleted`` is optional (a CMS
that lists deletions gives the monitor their time). Every request carries the
configured headers (an auth header such as ``Authorization: Bearer ...``).
Timeouts, connection errors, 429 and 5xx are retried a few times, then raise
``SourceUnavailableError``; any other status or a malformed body raises
``SourceDataError`` naming the URL.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Iterator, Mapping
from datetime import UTC
from typing import Any

import httpx
import pydantic
from pydantic import AliasChoices, AwareDatetime, BaseModel, ConfigDict, Field

from events.model import ContentType, EventMetadata
from sources.base import SourceDocument, SourceEntry
from sources.errors import DocumentNotFoundError, SourceDataError, SourceUnavailableError
from sources.limits import PAGE_SIZE, TIMEOUT_SECONDS

_ID = AliasChoices("id", "document_id")


class _ListedDocument(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    id: str = Field(min_length=1, validation_alias=_ID)
    version: int = Field(ge=1, strict=True)
    changed_at: AwareDatetime
    deleted: bool = False


class _Page(BaseModel):
    model_config = ConfigDict(extra="ignore")
    documents: list[_ListedDocument]
    next_cursor: str | None = None


class _Document(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1, validation_alias=_ID)
    version: int = Field(ge=1, strict=True)
    changed_at: AwareDatetime
    content: str
    content_type: ContentType = "text/markdown"
    metadata: EventMetadata = Field(default_factory=EventMetadata)


def parse_header(line: str) -> dict[str, str]:
    """``"Authorization: Bearer abc"`` -> ``{"Authorization": "Bearer abc"}``."""
    name, sep, value = line.partition(":")
    if not sep or not name.strip() or not value.strip():
        raise ValueError("an auth header is 'Name: value' (value not shown)")
    return {name.strip(): value.strip()}


class CmsApiSource:
    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        page_size: int = PAGE_SIZE,
        timeout_seconds: float = TIMEOUT_SECONDS,
        attempts: int = 3,
        backoff_seconds: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.page_size = page_size
        self.attempts = attempts
        self.backoff_seconds = backoff_seconds
        self._client = httpx.Client(
            headers=dict(headers or {}), timeout=timeout_seconds, transport=transport
        )

    @property
    def name(self) -> str:
        return "cms"

    def _get(self, url: str, params: Mapping[str, str | int] | None = None) -> httpx.Response:
        """GET with retries of transient failures; 404/410 are returned to the caller."""
        for attempt in range(1, self.attempts + 1):
            try:
                response = self._client.get(url, params=params)
            except httpx.TransportError as exc:  # connect, read, timeout
                problem = f"cannot reach {url}: {exc!r}"
            else:
                if response.status_code == 429 or response.status_code >= 500:
                    problem = f"{url} answered {response.status_code}"
                elif response.status_code in (200, 404, 410):
                    return response
                else:
                    raise SourceDataError(
                        f"{url} answered {response.status_code}: {response.text[:200]!r}"
                    )
            if attempt < self.attempts:
                time.sleep(self.backoff_seconds * 2 ** (attempt - 1))
        raise SourceUnavailableError(f"{problem} (after {self.attempts} attempts)")

    def _json(self, response: httpx.Response, model: type[Any]) -> Any:
        try:
            return model.model_validate_json(response.content)
        except pydantic.ValidationError as exc:
            raise SourceDataError(
                f"{response.request.url}: not a valid answer: {exc.errors()[:3]}"
            ) from exc

    def list_documents(self) -> Iterator[SourceEntry]:
        url = f"{self.base_url}/documents"
        cursor: str | None = None
        seen_cursors: set[str] = set()
        while True:
            params: dict[str, str | int] = {"limit": self.page_size}
            if cursor is not None:
                params["cursor"] = cursor
            response = self._get(url, params)
            if response.status_code != 200:
                raise SourceDataError(f"{url} answered {response.status_code} to a listing")
            page: _Page = self._json(response, _Page)
            for item in page.documents:
                yield SourceEntry(
                    item.id, item.version, item.changed_at.astimezone(UTC), item.deleted
                )
            if page.next_cursor is None:
                return
            if page.next_cursor in seen_cursors:
                raise SourceDataError(f"{url}: next_cursor {page.next_cursor!r} repeats (a loop)")
            seen_cursors.add(page.next_cursor)
            cursor = page.next_cursor

    def get_document(self, document_id: str) -> SourceDocument:
        url = f"{self.base_url}/documents/{urllib.parse.quote(document_id, safe='')}"
        response = self._get(url)
        if response.status_code in (404, 410):
            raise DocumentNotFoundError(document_id)
        doc: _Document = self._json(response, _Document)
        if doc.id != document_id:
            raise SourceDataError(f"{url}: asked for {document_id!r}, got {doc.id!r}")
        return SourceDocument(
            document_id=doc.id,
            version=doc.version,
            changed_at=doc.changed_at.astimezone(UTC),
            content=doc.content,
            content_type=doc.content_type,
            metadata=doc.metadata,
        )

    def close(self) -> None:
        self._client.close()
