"""``PolicyIndexerClient`` and ``AsyncPolicyIndexerClient``: ``POST /search`` and
``POST /citations/check`` of a ``policy-indexer serve``, typed both ways.

Configuration, an argument first, else the environment:

- ``base_url`` / ``POLICY_INDEXER_URL`` (default ``http://127.0.0.1:8090``, what
  ``serve`` listens on by default);
- ``api_key`` / ``POLICY_INDEXER_API_KEY`` (required: the server takes the caller's
  labels from it, never from the request);
- ``timeout`` (seconds, default 30) and ``retry`` (``RetryPolicy``: 503 and 429
  retried after their ``Retry-After``, at most 3 tries by default).

Errors are in ``policy_indexer_client.errors``; a refusal raises with the server's
``detail``, e.g. ``InvalidRequestError: POST /search: 422 invalid_request: k=11: ...``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any, Self, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from policy_indexer_client.errors import (
    ConfigurationError,
    PolicyIndexerError,
    TransportError,
    api_error,
)
from policy_indexer_client.models import (
    CheckRequest,
    CheckResponse,
    Citation,
    SearchRequest,
    SearchResponse,
)
from policy_indexer_client.retry import RETRIED_STATUSES, RetryPolicy, retry_after

URL_ENV = "POLICY_INDEXER_URL"
API_KEY_ENV = "POLICY_INDEXER_API_KEY"
DEFAULT_URL = "http://127.0.0.1:8090"
DEFAULT_TIMEOUT_S = 30.0
SEARCH_PATH = "/search"
CITATIONS_PATH = "/citations/check"
USER_AGENT = "policy-indexer-client/0.1.0"

M = TypeVar("M", bound=BaseModel)


def search_request(question: str | SearchRequest, *, scope: Iterable[str] | None = None,
                   as_of: date | None = None, k: int | None = None,
                   neighbours: bool | None = None,
                   language: str | None = None) -> SearchRequest:
    """A ``SearchRequest`` from a question and the options given (the others: defaults)."""
    if isinstance(question, SearchRequest):
        return question
    options: dict[str, Any] = {"scope": list(scope) if scope is not None else None,
                               "as_of": as_of, "k": k, "neighbours": neighbours,
                               "language": language}
    return SearchRequest(question=question,
                         **{name: v for name, v in options.items() if v is not None})


def check_request(citations: Iterable[Citation | Mapping[str, Any]], *,
                  run_id: str | None = None, scope: Iterable[str] | None = None,
                  as_of: date | None = None) -> CheckRequest:
    return CheckRequest(
        run_id=run_id, scope=list(scope) if scope is not None else None, as_of=as_of,
        citations=[c if isinstance(c, Citation) else Citation.model_validate(c)
                   for c in citations])


class _Config:
    """Everything both clients share: where, who, how long, how often; reading answers."""

    def __init__(self, base_url: str | None, api_key: str | None, timeout: float,
                 retry: RetryPolicy) -> None:
        url = base_url or os.environ.get(URL_ENV) or DEFAULT_URL
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"base_url={url!r} (or {URL_ENV}): must start with http:// or https://")
        key = api_key or os.environ.get(API_KEY_ENV)
        if not key:
            raise ConfigurationError(
                f"no API key: pass api_key= or set {API_KEY_ENV} (a key of the server's "
                "POLICY_INDEXER_SEARCH_API_KEYS)")
        self.base_url = url.rstrip("/")
        self.timeout = httpx.Timeout(timeout)
        self.retry = retry
        self.headers = {"Authorization": f"Bearer {key}", "Accept": "application/json",
                        "User-Agent": USER_AGENT}

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    @staticmethod
    def body(request: BaseModel) -> dict[str, Any]:
        return request.model_dump(mode="json", exclude_none=True)

    def result(self, response: httpx.Response, model: type[M], path: str,
               attempts: int) -> M:
        method_path = f"POST {path}"
        if response.status_code != 200:
            try:
                body: Any = response.json()
            except ValueError:
                body = None
            asked = retry_after(response)
            note = ""
            if response.status_code in RETRIED_STATUSES and asked is not None \
                    and asked > self.retry.max_wait_s:
                note = (f" (Retry-After: {asked:g} s, more than max_wait_s="
                        f"{self.retry.max_wait_s:g}: not waited for)")
            raise api_error(response.status_code, body, response.text,
                            method_path=method_path, attempts=attempts, note=note)
        try:
            return model.model_validate_json(response.content)
        except ValidationError as exc:
            raise PolicyIndexerError(
                f"{method_path}: the answer is not a {model.__name__}: {exc}") from exc

    def unreachable(self, path: str, exc: httpx.HTTPError, attempts: int) -> TransportError:
        kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "failed"
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        return TransportError(f"POST {self.base_url}{path} {kind}{tries}: "
                              f"{type(exc).__name__}: {exc}")


class PolicyIndexerClient(_Config):
    """The blocking client. Use it as a context manager, or ``close()`` it."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *,
                 timeout: float = DEFAULT_TIMEOUT_S, retry: RetryPolicy | None = None,
                 transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(base_url, api_key, timeout, retry or RetryPolicy())
        self._http = httpx.Client(base_url=self.base_url, headers=self.headers,
                                  timeout=self.timeout, transport=transport)

    def search(self, question: str | SearchRequest, *, scope: Iterable[str] | None = None,
               as_of: date | None = None, k: int | None = None,
               neighbours: bool | None = None, language: str | None = None) -> SearchResponse:
        request = search_request(question, scope=scope, as_of=as_of, k=k,
                                 neighbours=neighbours, language=language)
        return self._post(SEARCH_PATH, request, SearchResponse)

    def check_citations(self, citations: Iterable[Citation | Mapping[str, Any]], *,
                        run_id: str | None = None, scope: Iterable[str] | None = None,
                        as_of: date | None = None) -> CheckResponse:
        request = check_request(citations, run_id=run_id, scope=scope, as_of=as_of)
        return self._post(CITATIONS_PATH, request, CheckResponse)

    def _post(self, path: str, request: BaseModel, model: type[M]) -> M:
        body = self.body(request)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.post(path, json=body)
            except httpx.ConnectError as exc:
                delay = self.retry.delay(attempt, None)
                if delay is None:
                    raise self.unreachable(path, exc, attempt) from exc
            except httpx.HTTPError as exc:
                raise self.unreachable(path, exc, attempt) from exc
            else:
                delay = self.retry.delay(attempt, response)
                if delay is None:
                    return self.result(response, model, path, attempt)
            time.sleep(delay)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncPolicyIndexerClient(_Config):
    """The asyncio client: the same calls, awaited. ``async with`` it, or ``aclose()`` it."""

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *,
                 timeout: float = DEFAULT_TIMEOUT_S, retry: RetryPolicy | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(base_url, api_key, timeout, retry or RetryPolicy())
        self._http = httpx.AsyncClient(base_url=self.base_url, headers=self.headers,
                                       timeout=self.timeout, transport=transport)

    async def search(self, question: str | SearchRequest, *,
                     scope: Iterable[str] | None = None, as_of: date | None = None,
                     k: int | None = None, neighbours: bool | None = None,
                     language: str | None = None) -> SearchResponse:
        request = search_request(question, scope=scope, as_of=as_of, k=k,
                                 neighbours=neighbours, language=language)
        return await self._post(SEARCH_PATH, request, SearchResponse)

    async def check_citations(self, citations: Iterable[Citation | Mapping[str, Any]], *,
                              run_id: str | None = None, scope: Iterable[str] | None = None,
                              as_of: date | None = None) -> CheckResponse:
        request = check_request(citations, run_id=run_id, scope=scope, as_of=as_of)
        return await self._post(CITATIONS_PATH, request, CheckResponse)

    async def _post(self, path: str, request: BaseModel, model: type[M]) -> M:
        body = self.body(request)
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.post(path, json=body)
            except httpx.ConnectError as exc:
                delay = self.retry.delay(attempt, None)
                if delay is None:
                    raise self.unreachable(path, exc, attempt) from exc
            except httpx.HTTPError as exc:
                raise self.unreachable(path, exc, attempt) from exc
            else:
                delay = self.retry.delay(attempt, response)
                if delay is None:
                    return self.result(response, model, path, attempt)
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
