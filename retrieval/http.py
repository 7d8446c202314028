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
import math
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import pydantic_core
import structlog
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

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
_MAX_SHOWN_INPUT = 120
_DRAIN_BYTES = 64 * 1024


class _BodyTooLarge(Exception):
    pass


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
        return await _unread(request, caller)
    content_type = request.headers.get("content-type")
    if not _is_json(content_type):
        return await _unread(request, _refuse(
            415, "unsupported_media_type",
            f"Content-Type={content_type!r}; send application/json (UTF-8)"))
    try:
        body = await _read_limited(request, max_body_bytes)
    except _BodyTooLarge as exc:
        return _refuse(413, "payload_too_large", str(exc), close=True)
    except ClientDisconnect:
        return _refuse(400, "client_disconnected", "the client left mid-body")
    try:
        # pydantic-core's parser: a nesting limit (200) instead of a RecursionError,
        # and a lone surrogate (\ud800) refused, which no store could encode.
        data = pydantic_core.from_json(body, allow_inf_nan=False)
    except ValueError as exc:
        return _refuse(400, "invalid_json", f"body is not valid JSON: {exc}")
    if not isinstance(data, dict):
        return _refuse(400, "invalid_json",
                       f"body must be a JSON object, got {type(data).__name__}")
    return caller, data


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

    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> JSONResponse:
        reason = await anyio.to_thread.run_sync(not_ready)
        if reason is None:
            return JSONResponse({"status": "ok"})
        return JSONResponse({"status": "unavailable", "last_error": reason}, status_code=503)

    routes = [
        *search_routes(searcher, credentials, metrics, max_body_bytes=max_body_bytes,
                       gate=gate),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
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
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    return metrics_endpoint


def field_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Each error with its field and the value sent (shortened): the caller's own input."""
    errors = []
    for err in exc.errors(include_url=False, include_context=False):
        loc = [_printable(str(p)) if not isinstance(p, int) else p for p in err["loc"]]
        message = err["msg"]
        if err["type"] == "extra_forbidden" and loc and loc[0] in _LABEL_FIELDS:
            message = ("labels are not accepted in the request: they come from the "
                       "caller's API key")
        errors.append({"loc": loc, "msg": message, "type": err["type"],
                       "input": _shorten(err.get("input"))})
    return errors


def describe(errors: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}={json.dumps(e['input'])}: {e['msg']}"
        for e in errors
    )


def _shorten(value: Any) -> Any:
    if isinstance(value, str):
        value = _printable(value)
    if isinstance(value, str) and len(value) > _MAX_SHOWN_INPUT:
        return value[:_MAX_SHOWN_INPUT] + "..."
    if isinstance(value, dict | list):
        text = json.dumps(value, default=str)
        return value if len(text) <= _MAX_SHOWN_INPUT else text[:_MAX_SHOWN_INPUT] + "..."
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # 1e400 parses as inf, which JSON cannot carry back
    if value is None or isinstance(value, bool | int | float):
        return value
    return _printable(str(value))[:_MAX_SHOWN_INPUT]


def _printable(text: str) -> str:
    """``text`` with any lone surrogate as ``\\udXXX``: an answer must encode as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


async def _unread(request: Request, response: Response) -> Response:
    """Answer before the body is read: drop a small body, else close the connection.

    A server that closes a connection with unread bytes resets it, and the reset
    can destroy the answer on its way; a small body is cheaper to read.
    """
    try:
        await _read_limited(request, _DRAIN_BYTES)
    except (_BodyTooLarge, ClientDisconnect):
        response.headers["Connection"] = "close"
    return response


async def _read_limited(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _BodyTooLarge(f"body is larger than {limit} bytes (Content-Length: {declared})")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _BodyTooLarge(f"body is larger than {limit} bytes")
    return bytes(body)


def _is_json(content_type: str | None) -> bool:
    if content_type is None:
        return False
    media_type, *params = (p.strip().lower() for p in content_type.split(";"))
    if media_type != "application/json":
        return False
    charsets = [p.partition("=")[2].strip('"') for p in params if p.startswith("charset=")]
    return all(c in ("utf-8", "utf8") for c in charsets)


def _refuse(
    status: int,
    error: str,
    detail: str,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
    close: bool = False,
) -> JSONResponse:
    log.info("search refused", status=status, error=error, detail=detail)
    body: dict[str, Any] = {"error": error, "detail": detail}
    if errors is not None:
        body["errors"] = errors
    all_headers = dict(headers or {})
    if close:
        # The rest of the body is left unread: say so rather than reset mid-answer.
        all_headers["Connection"] = "close"
    return _AsciiJSONResponse(body, status_code=status, headers=all_headers)


class _AsciiJSONResponse(JSONResponse):
    """A refusal as ASCII JSON: it may echo the caller's input, lone surrogates included
    (``\\ud800``), which UTF-8 cannot encode (a plain-text 500 otherwise)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")
