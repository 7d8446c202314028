"""``POST /search`` over HTTP, with the caller's labels taken from its API key.

``create_search_app(searcher, credentials, registry)`` builds a Starlette app
with ``POST /search``, ``GET /healthz``, ``GET /readyz`` and, only when given a
``metrics_token``, ``GET /metrics`` behind ``Authorization: Bearer <that token>``
(401 without it; without a token the path is 404: the process's metrics are then
for its loopback metrics server alone, since they name documents); ``search_routes``
gives only the search route, to mount beside the webhook receiver
(``webhooks.app.create_app(..., extra_routes=search_routes(...))``). Serve it
like the receiver: ``webhooks.serve.serve(app, host, port)``.

The checks run cheapest first and each refusal says what was wrong:

1. ``Authorization: Bearer <key>`` present and known           → 401 (which of the two)
2. ``Content-Type: application/json`` (UTF-8)                   → 415
3. body size, enforced while reading                            → 413
4. JSON object (UTF-8, at most 200 levels deep, no lone surrogate) → 400
   (2 to 4 are ``foundation.http.edge``'s, as for every route)
5. a valid ``SearchRequest`` (no ``labels`` field: rule 8)      → 422, naming field and value
6. the search                                                   → 200 ``SearchResponse``, or 500

``GET /openapi.json`` is the OpenAPI 3.1 document of these routes, generated from the
models (``retrieval.openapi``), served without a key.

``POST /citations/check`` (``citation_routes``, with a ``CitationChecker``) takes the
same keys and runs checks 1 to 4 the same way (its body may hold 256 kB: 50
citations with quotes and claims), then a valid ``CheckRequest`` (422), a run id of
this key (404 ``unknown_run``), and answers the ``CheckResponse``.

The search runs in a worker thread (the stores are blocking clients).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import structlog
from prometheus_client import CollectorRegistry
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from foundation.http.edge import InvalidJson, checked_body, json_object, refusal, unread
from foundation.http.routes import metrics_response, ok, probe_routes
from foundation.validation import describe
from foundation.validation import field_errors as validation_errors
from retrieval.citations import CheckRequest, CitationChecker, UnknownRun
from retrieval.credentials import Caller, Credentials, UnknownKey
from retrieval.metrics import CitationMetrics, SearchMetrics
from retrieval.models import SearchRequest
from retrieval.no_access import NoAccessGate
from retrieval.openapi import OPENAPI_ROUTE, openapi_document
from retrieval.searcher import MeteredSearcher, Searcher, search_as

M = TypeVar("M", bound=BaseModel)

log = structlog.get_logger(__name__)

SEARCH_ROUTE = "/search"
CITATIONS_ROUTE = "/citations/check"
DEFAULT_MAX_BODY_BYTES = 16 * 1024  # a question is at most 2,000 characters
# 50 citations, each with a quote and a claim of up to 2,000 characters
DEFAULT_CITATIONS_BODY_BYTES = 256 * 1024
_LABEL_FIELDS = frozenset({"labels", "access_labels", "caller_labels"})


class SearchEndpoint:
    """The ``POST /search`` handler; ``searcher`` is already metered by the factory."""

    def __init__(
        self, searcher: Searcher, credentials: Credentials, max_body_bytes: int,
        gate: NoAccessGate | None = None,
    ) -> None:
        if max_body_bytes < 1:
            raise ValueError(f"max_body_bytes={max_body_bytes} must be positive")
        self._searcher = searcher
        self._credentials = credentials
        self._max_body_bytes = max_body_bytes
        self._gate = gate

    async def handle(self, request: Request) -> Response:
        got = await caller_and_request(request, self._credentials, self._max_body_bytes,
                                       SearchRequest)
        if isinstance(got, Response):
            return got
        caller, search_request = got
        try:
            response = await anyio.to_thread.run_sync(
                search_as, self._searcher, search_request, caller, self._gate
            )
        except Exception:
            log.exception("search failed", key_id=caller.key_id)
            return _refuse(500, "search_failed", "the search failed; it has been logged")
        log.info("search answered", key_id=caller.key_id, status=response.status,
                 passages=len(response.passages))
        return JSONResponse(response.model_dump(mode="json"))


async def caller_and_body(
    request: Request, credentials: Credentials, max_body_bytes: int
) -> tuple[Caller, dict[str, Any]] | Response:
    """Checks 1 to 4 (key, content type, size, JSON object): the caller and the body's
    object, or the refusal that says what was wrong."""
    caller = authenticate(request.headers.get("authorization"), credentials)
    if isinstance(caller, Response):
        return await unread(request, caller)
    body = await checked_body(request, max_body_bytes, _refuse)
    if isinstance(body, Response):
        return body
    try:
        return caller, json_object(body)
    except InvalidJson as exc:
        return _refuse(400, "invalid_json", str(exc))


async def caller_and_request(
    request: Request, credentials: Credentials, max_body_bytes: int, model: type[M]
) -> tuple[Caller, M] | Response:
    """``caller_and_body``, then the body as ``model``, or the 422 naming each field."""
    got = await caller_and_body(request, credentials, max_body_bytes)
    if isinstance(got, Response):
        return got
    caller, data = got
    try:
        return caller, model.model_validate(data)
    except ValidationError as exc:
        errors = field_errors(exc)
        return _refuse(422, "invalid_request", describe(errors), errors=errors)


class CitationsEndpoint:
    """The ``POST /citations/check`` handler: the same keys, checks and refusals as
    ``/search`` (labels from the key, never the body), then ``404 unknown_run`` for a
    run id this key has no run of, or the ``CheckResponse``."""

    def __init__(self, checker: CitationChecker, credentials: Credentials,
                 max_body_bytes: int, metrics: CitationMetrics | None = None) -> None:
        self._checker = checker
        self._credentials = credentials
        self._max_body_bytes = max_body_bytes
        self._metrics = metrics

    async def handle(self, request: Request) -> Response:
        got = await caller_and_request(request, self._credentials, self._max_body_bytes,
                                       CheckRequest)
        if isinstance(got, Response):
            return got
        caller, check_request = got
        try:
            response = await anyio.to_thread.run_sync(self._checker.check, check_request, caller)
        except UnknownRun as exc:
            return _refuse(404, "unknown_run", str(exc))
        except Exception:
            log.exception("citation check failed", key_id=caller.key_id)
            return _refuse(500, "check_failed", "the check failed; it has been logged")
        if self._metrics is not None:
            self._metrics.observe("http", (r.codes for r in response.results))
        log.info("citations checked", key_id=caller.key_id, ok=response.ok,
                 citations=len(response.results))
        return JSONResponse(response.model_dump(mode="json"))


def citation_routes(
    checker: CitationChecker, credentials: Credentials, *,
    metrics: CitationMetrics | None = None, max_body_bytes: int = DEFAULT_CITATIONS_BODY_BYTES,
) -> list[Route]:
    """The ``POST /citations/check`` route alone."""
    endpoint = CitationsEndpoint(checker, credentials, max_body_bytes, metrics)
    return [Route(CITATIONS_ROUTE, endpoint.handle, methods=["POST"])]


def authenticate(authorization: str | None, credentials: Credentials) -> Caller | Response:
    """The caller of a bearer token, or the 401 that says why there is none."""
    challenge = {"WWW-Authenticate": 'Bearer realm="policy-search"'}
    if not authorization:
        return _refuse(401, "unauthorized",
                       "no API key: send Authorization: Bearer <key>", headers=challenge)
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return _refuse(401, "unauthorized",
                       "Authorization must be 'Bearer <key>'", headers=challenge)
    try:
        return credentials.resolve(token)
    except UnknownKey:
        return _refuse(401, "unauthorized", "the API key is not known", headers=challenge)


def search_routes(
    searcher: Searcher,
    credentials: Credentials,
    metrics: SearchMetrics,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    gate: NoAccessGate | None = None,
) -> list[Route]:
    """The ``POST /search`` route alone, to add to another Starlette app.

    ``gate``: the process's ``no_access`` budgets (shared with the MCP tool); without
    one, no caller is told ``no_access``, whatever its key says.
    """
    endpoint = SearchEndpoint(MeteredSearcher(searcher, metrics, "http"), credentials,
                              max_body_bytes, gate)
    return [Route(SEARCH_ROUTE, endpoint.handle, methods=["POST"])]


def create_search_app(
    searcher: Searcher,
    credentials: Credentials,
    registry: CollectorRegistry,
    *,
    metrics: SearchMetrics | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    not_ready: Callable[[], str | None] = lambda: None,
    gate: NoAccessGate | None = None,
    metrics_token: str | None = None,
    checker: CitationChecker | None = None,
    citation_metrics: CitationMetrics | None = None,
) -> Starlette:
    """``POST /search``, ``GET /healthz``, ``GET /readyz``; ``GET /metrics`` (of ``registry``)
    only with ``metrics_token``, and then only for ``Authorization: Bearer <metrics_token>``.

    Pass ``metrics`` when the same registry already holds them (the MCP server
    in the same process); else they are created in ``registry``. ``not_ready``
    says why the index cannot be searched now (``None``: it can): ``/readyz``
    is then 503 with that reason, so a load balancer stops sending questions
    that would fail. ``checker``: ``POST /citations/check`` beside ``/search``.
    ``GET /openapi.json`` describes the routes the app has (``retrieval.openapi``).
    """
    metrics = metrics or SearchMetrics.create(registry)

    def readiness() -> tuple[int, dict[str, Any]]:
        reason = not_ready()
        if reason is None:
            return 200, {"status": "ok"}
        return 503, {"status": "unavailable", "last_error": reason}

    routes = [
        *search_routes(searcher, credentials, metrics, max_body_bytes=max_body_bytes,
                       gate=gate),
        *probe_routes(ok, readiness),
        Route(OPENAPI_ROUTE, openapi_route(citations=checker is not None), methods=["GET"]),
    ]
    if checker is not None:
        routes += citation_routes(checker, credentials, metrics=citation_metrics)
    if metrics_token is not None:
        routes.append(Route("/metrics", metrics_route(registry, metrics_token),
                            methods=["GET"]))
    return Starlette(routes=routes)


def openapi_route(*, citations: bool) -> Callable[[Request], Awaitable[Response]]:
    """``GET /openapi.json``: the document, rendered once."""
    body = json.dumps(openapi_document(citations=citations)).encode("utf-8")

    async def openapi_endpoint(_: Request) -> Response:
        return Response(body, media_type="application/json")

    return openapi_endpoint


MIN_METRICS_TOKEN_BYTES = 16


def metrics_route(
    registry: CollectorRegistry, token: str
) -> Callable[[Request], Awaitable[Response]]:
    """``GET /metrics`` of ``registry`` for a bearer of ``token`` only (401 otherwise)."""
    if len(token.encode("utf-8")) < MIN_METRICS_TOKEN_BYTES:
        raise ValueError(f"the metrics token needs at least {MIN_METRICS_TOKEN_BYTES} bytes")
    wanted = hashlib.sha256(token.encode("utf-8")).digest()
    challenge = {"WWW-Authenticate": 'Bearer realm="policy-search-metrics"'}

    async def metrics_endpoint(request: Request) -> Response:
        scheme, _, presented = (request.headers.get("authorization") or "").partition(" ")
        digest = hashlib.sha256(presented.strip().encode("utf-8", "replace")).digest()
        if scheme.lower() != "bearer" or not hmac.compare_digest(digest, wanted):
            return _refuse(401, "unauthorized",
                           "/metrics needs Authorization: Bearer <the metrics token>",
                           headers=challenge)
        return metrics_response(registry)

    return metrics_endpoint


def field_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Each error with its field and the value sent (shortened): the caller's own input.
    Labels in the request are named as the rule they break (they come from the key)."""
    errors = validation_errors(exc, shown_input=True)
    for error in errors:
        loc = error["loc"]
        if error["type"] == "extra_forbidden" and loc and loc[0] in _LABEL_FIELDS:
            error["msg"] = ("labels are not accepted in the request: they come from the "
                            "caller's API key")
    return errors


def _refuse(status: int, error: str, detail: str, **options: Any) -> JSONResponse:
    """``edge.refusal`` (``errors``, ``headers``), logged as the search's."""
    log.info("search refused", status=status, error=error, detail=detail)
    return refusal(status, error, detail, **options)
