"""What every POST route checks before its own work, and how it says no.

The webhook receiver, the CMS adapters' endpoints and the search API read a
request the same way, cheapest check first, each refusal a JSON object
``{"error", "detail"[, "errors"]}`` (``refusal``):

- **content type** (``content_type_problem``): one of the route's media types,
  with no charset or a UTF-8 one, else 415 ``unsupported_media_type``;
- **body size** (``read_body``): a declared ``Content-Length`` above the limit is
  refused before a byte of the body is read, a body without one (chunked) as
  soon as the bytes received pass the limit, 413 ``payload_too_large``; a
  ``Content-Length`` that is not a number is 400 ``bad_request``; a client gone
  mid-body 400 ``client_disconnected``;
- **JSON** (``json_object``, ``validate_json``): not JSON (UTF-8, at most 200
  levels deep, no NaN, no lone surrogate) is 400 ``invalid_json``, as is JSON
  that is not an object where an object is asked for;
- **fields**: a validation error in ``foundation.validation``'s words (with the
  input for a caller whose input is its own: ``field_errors(..., shown_input=True)``).

A route answers before (all of) the body is read through ``unread``: a small
body is drained so the connection stays usable, a larger one is left and the
answer says ``Connection: close``. The caller logs its refusals: it hands
``read_body`` its ``refuse`` (status, error, detail → the response).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import pydantic_core
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from foundation.validation import field_errors

M = TypeVar("M", bound=BaseModel)

JSON_TYPES = frozenset({"application/json"})
# A refused body up to this size is read and dropped to keep the connection usable.
DRAIN_BYTES = 64 * 1024

# (status, error, detail) -> the refusal, logged the caller's way.
Refuse = Callable[[int, str, str], Response]


# -- content type --------------------------------------------------------------
def media_type(content_type: str | None) -> str | None:
    """``application/json`` of ``application/json; charset=utf-8``; None when there is
    no Content-Type or its charset is not UTF-8."""
    if content_type is None:
        return None
    media, *params = (p.strip().lower() for p in content_type.split(";"))
    charsets = [p.partition("=")[2].strip('"') for p in params if p.startswith("charset=")]
    if not all(c in ("utf-8", "utf8") for c in charsets):
        return None
    return media


def content_type_problem(
    content_type: str | None, accepted: frozenset[str] = JSON_TYPES
) -> str | None:
    """What is wrong with ``content_type`` for a route taking ``accepted`` (the 415's
    detail), or None when it is one of them."""
    if media_type(content_type) in accepted:
        return None
    wanted = " or ".join(sorted(accepted))
    return f"Content-Type={content_type!r}; send {wanted} (UTF-8)"


# -- the body ------------------------------------------------------------------
class BodyTooLarge(Exception):
    def __init__(self, limit: int, seen: int, declared: bool) -> None:
        how = "declared Content-Length" if declared else "received so far"
        super().__init__(f"body is larger than max_body_bytes={limit} ({how}: {seen})")
        self.limit = limit


class BadContentLength(Exception):
    pass


async def read_limited(request: Request, limit: int) -> bytes:
    """The body, at most ``limit`` bytes; the rest is never read (see the module)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isascii() or not declared.isdigit():
            raise BadContentLength(f"Content-Length={declared[:30]!r} is not a number")
        if int(declared) > limit:
            raise BodyTooLarge(limit, int(declared), declared=True)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge(limit, len(body), declared=False)
    return bytes(body)


async def drain(request: Request, cap: int) -> bool:
    """Read and drop a body of at most ``cap`` bytes; False if it is larger (left unread).

    Answering before the body is read makes the server close the connection,
    and a close with unread bytes resets it, which can destroy the answer on
    its way to the client. A small body is cheaper to read than to lose the answer.
    """
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > cap):
        return False
    seen = 0
    try:
        async for chunk in request.stream():
            seen += len(chunk)
            if seen > cap:
                return False
    except RuntimeError:  # "Stream consumed": its last part was read already, none is left
        return True
    return True


async def unread(request: Request, response: Response) -> Response:
    """Answer before (all of) the body is read: drain a small one, else say we will close."""
    try:
        drained = await drain(request, DRAIN_BYTES)
    except ClientDisconnect:
        drained = False
    if not drained:
        response.headers["Connection"] = "close"
    return response


async def read_body(request: Request, limit: int, refuse: Refuse) -> bytes | Response:
    """The body, or the refusal to send: 413 over ``limit``, 400 for a bad Content-Length or
    a client gone mid-body."""
    try:
        return await read_limited(request, limit)
    except BodyTooLarge as exc:
        return await unread(request, refuse(413, "payload_too_large", str(exc)))
    except BadContentLength as exc:
        return await unread(request, refuse(400, "bad_request", str(exc)))
    except ClientDisconnect:
        # Nobody may be left to answer; the response is for the logs and metrics.
        return refuse(400, "client_disconnected", "the client left mid-body")


async def checked_body(
    request: Request, limit: int, refuse: Refuse, accepted: frozenset[str] = JSON_TYPES
) -> bytes | Response:
    """The content type (415), then the body (``read_body``)."""
    problem = content_type_problem(request.headers.get("content-type"), accepted)
    if problem is not None:
        return await unread(request, refuse(415, "unsupported_media_type", problem))
    return await read_body(request, limit, refuse)


# -- JSON ----------------------------------------------------------------------
class InvalidJson(ValueError):
    """The body is not JSON, or not the JSON object asked for: a 400 ``invalid_json``."""


def json_object(body: bytes) -> dict[str, Any]:
    """``body`` as a JSON object, else ``InvalidJson`` saying why.

    pydantic-core's parser: a nesting limit (200) instead of a RecursionError, NaN and
    a lone surrogate (``\\ud800``) refused, which no store could encode.
    """
    try:
        data = pydantic_core.from_json(body, allow_inf_nan=False)
    except ValueError as exc:
        raise InvalidJson(not_json(str(exc))) from exc
    if not isinstance(data, dict):
        raise InvalidJson(f"body must be a JSON object, got {type(data).__name__}")
    return data


def validate_json(model: type[M], body: bytes) -> M:
    """``body`` as ``model`` (pydantic's JSON mode): ``InvalidJson`` when it is not JSON,
    the ``ValidationError`` of its fields otherwise."""
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        for error in field_errors(exc):
            if error["type"] == "json_invalid":
                raise InvalidJson(not_json(error["msg"])) from exc
        raise


def not_json(reason: str) -> str:
    if "recursion limit" in reason:
        reason = f"nested too deeply ({reason})"
    return f"body is not valid JSON: {reason}"


# -- refusals ------------------------------------------------------------------
def refusal(
    status: int,
    error: str,
    detail: str,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The JSON answer of a refused request: ``{"error", "detail"[, "errors"]}``."""
    body: dict[str, Any] = {"error": error, "detail": detail}
    if errors is not None:
        body["errors"] = errors
    return AsciiJSONResponse(body, status_code=status, headers=headers)


class AsciiJSONResponse(JSONResponse):
    """JSON as ASCII: a refusal may echo the caller's input, lone surrogates included
    (``\\ud800``), which UTF-8 cannot encode (a plain-text 500 otherwise)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")
