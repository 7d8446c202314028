"""The ``search_policy`` MCP tool, over stdio and over streamable HTTP.

Built on the ``mcp`` SDK's low-level ``Server`` (2.x), so the tool's input
schema is exactly ``SearchRequest``'s and its output schema exactly
``SearchResponse``'s (the HTTP endpoint and the CLI return the same object);
the result carries it as structured content, and as JSON text for clients
that read only text. Annotations: read-only, idempotent, not destructive,
closed world (it reads our index, nothing outside it). With a ``CitationChecker``
the server lists a second tool beside it, ``check_citations``
(``retrieval.citations``), whose description says what it checks and that it does
not judge a claim's meaning; its caller is bound the same way.

Labels, bound from credentials (rule 8), never from the arguments (the input
schema forbids extra fields):

- stdio: one caller per process, so ``run_stdio(searcher, labels)`` takes the
  labels the process's own configured key resolved to at start
  (``labels_for_key(credentials, key)``);
- streamable HTTP: ``streamable_http_app(searcher, credentials)`` refuses a
  request without a known ``Authorization: Bearer <key>`` with 401 before the
  SDK sees it, and the tool resolves the labels of each call from that same
  request's header.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
import structlog
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from foundation.validation import describe
from retrieval.citations import TOOL_DESCRIPTION as CHECK_TOOL_DESCRIPTION
from retrieval.citations import TOOL_NAME as CHECK_TOOL_NAME
from retrieval.citations import CheckRequest, CheckResponse, CitationChecker, UnknownRun
from retrieval.credentials import Caller, Credentials, UnknownKey
from retrieval.http import authenticate, field_errors
from retrieval.metrics import CitationMetrics, SearchMetrics
from retrieval.models import TOOL_DESCRIPTION, TOOL_NAME, SearchRequest, SearchResponse
from retrieval.no_access import NoAccessGate
from retrieval.searcher import MeteredSearcher, Searcher, search_as

log = structlog.get_logger(__name__)

SERVER_NAME = "policy-indexer"
MCP_PATH = "/mcp"
CallerOf = Callable[[ServerRequestContext[Any, Any]], Caller]


class NoCaller(Exception):
    """A tool call arrived without credentials the server can map to labels."""


def search_policy_tool() -> types.Tool:
    """The tool as listed: name, description, schemas and annotations."""
    return _read_only_tool(TOOL_NAME, "Search the policy library", TOOL_DESCRIPTION,
                           SearchRequest, SearchResponse)


def check_citations_tool() -> types.Tool:
    """``check_citations`` as listed: what it checks, and what it does not."""
    return _read_only_tool(CHECK_TOOL_NAME, "Check a reply's citations",
                           CHECK_TOOL_DESCRIPTION, CheckRequest, CheckResponse)


def _read_only_tool(name: str, title: str, description: str, request: type[BaseModel],
                    response: type[BaseModel]) -> types.Tool:
    """A tool that reads the index and changes nothing: same call, same answer."""
    return types.Tool(
        name=name,
        title=title,
        description=description,
        input_schema=request.model_json_schema(),
        output_schema=response.model_json_schema(mode="serialization"),
        annotations=types.ToolAnnotations(
            title=title,
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )


def build_server(
    searcher: Searcher, caller_of: CallerOf, gate: NoAccessGate | None = None,
    checker: CitationChecker | None = None, citation_metrics: CitationMetrics | None = None,
) -> Server[Any]:
    """A low-level MCP server with ``search_policy`` (and ``check_citations`` with a
    ``checker``); ``caller_of`` binds each call's caller (its labels; ``gate``: whether
    its key may be told ``no_access``, within its rate)."""
    tool = search_policy_tool()
    tools = {TOOL_NAME: tool}
    if checker is not None:
        tools[CHECK_TOOL_NAME] = check_citations_tool()

    async def list_tools(
        _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tools.values()))

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in tools:
            return _error(f"unknown tool {params.name!r}; this server has "
                          f"{', '.join(map(repr, tools))}")
        try:
            caller = caller_of(ctx)
        except NoCaller as exc:
            return _error(str(exc))
        if params.name == CHECK_TOOL_NAME and checker is not None:
            return await _check(checker, caller, params.arguments, citation_metrics)
        try:
            request = SearchRequest.model_validate(params.arguments or {})
        except ValidationError as exc:
            return _error(f"invalid arguments: {describe(field_errors(exc))}")
        try:
            response = await anyio.to_thread.run_sync(search_as, searcher, request, caller, gate)
        except Exception:
            log.exception("search_policy failed")
            return _error("the search failed; it has been logged")
        data = response.model_dump(mode="json")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
            structured_content=data,
        )

    return Server(
        SERVER_NAME,
        instructions=TOOL_DESCRIPTION,
        get_tool_input_schema=lambda name: tools[name].input_schema if name in tools else None,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _check(checker: CitationChecker, caller: Caller, arguments: dict[str, Any] | None,
                 metrics: CitationMetrics | None) -> types.CallToolResult:
    try:
        request = CheckRequest.model_validate(arguments or {})
    except ValidationError as exc:
        return _error(f"invalid arguments: {describe(field_errors(exc))}")
    try:
        response = await anyio.to_thread.run_sync(checker.check, request, caller)
    except UnknownRun as exc:
        return _error(str(exc))
    except Exception:
        log.exception("check_citations failed")
        return _error("the check failed; it has been logged")
    if metrics is not None:
        metrics.observe("mcp", (r.codes for r in response.results))
    data = response.model_dump(mode="json")
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def labels_for_key(credentials: Credentials, key: str) -> frozenset[str]:
    """The labels of the process's own key (stdio), resolved once at start."""
    try:
        return credentials.resolve(key).labels
    except UnknownKey as exc:
        raise UnknownKey(
            "the MCP server's configured API key matches no configured key"
        ) from exc


async def run_stdio_async(
    searcher: Searcher, labels: frozenset[str], *, metrics: SearchMetrics | None = None,
    key_id: str = "stdio", checker: CitationChecker | None = None,
) -> None:
    caller = Caller(key_id, labels)  # one caller per process; never told no_access
    server = build_server(_metered(searcher, metrics), lambda _ctx: caller, checker=checker)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(
    searcher: Searcher, labels: frozenset[str], *, metrics: SearchMetrics | None = None,
    key_id: str = "stdio", checker: CitationChecker | None = None,
) -> None:
    """Serve ``search_policy`` (and ``check_citations`` with a ``checker``) on this
    process's stdin/stdout until the client leaves; ``key_id``: the configured key's id,
    whose runs the process records and may check."""
    anyio.run(functools.partial(run_stdio_async, searcher, labels, metrics=metrics,
                                key_id=key_id, checker=checker))


def streamable_http_app(
    searcher: Searcher,
    credentials: Credentials,
    *,
    metrics: SearchMetrics | None = None,
    path: str = MCP_PATH,
    host: str = "127.0.0.1",
    gate: NoAccessGate | None = None,
    checker: CitationChecker | None = None,
    citation_metrics: CitationMetrics | None = None,
) -> ASGIApp:
    """An ASGI app serving MCP at ``path``; every request needs a known bearer key.

    ``host`` is where it will listen: on loopback the SDK's DNS-rebinding
    protection (Host and Origin checks) is on. Run it with uvicorn with
    ``lifespan="on"`` (the SDK's session manager starts in the lifespan).
    """

    def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
        request = ctx.request
        if not isinstance(request, Request):
            raise NoCaller("no HTTP request to take the caller's API key from")
        caller = authenticate(request.headers.get("authorization"), credentials)
        if not isinstance(caller, Caller):
            raise NoCaller("the request has no known API key")
        return caller

    server = build_server(_metered(searcher, metrics), caller_of, gate, checker,
                          citation_metrics)
    app = server.streamable_http_app(streamable_http_path=path, host=host)
    return BearerGate(app, credentials)


class BearerGate:
    """Refuses an HTTP request without a known bearer key (401) before MCP reads it."""

    def __init__(self, app: ASGIApp, credentials: Credentials) -> None:
        self._app = app
        self._credentials = credentials

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope, receive)
            caller = authenticate(request.headers.get("authorization"), self._credentials)
            if not isinstance(caller, Caller):
                await caller(scope, receive, send)
                return
        await self._app(scope, receive, send)


def _metered(searcher: Searcher, metrics: SearchMetrics | None) -> Searcher:
    return searcher if metrics is None else MeteredSearcher(searcher, metrics, "mcp")


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)],
                                is_error=True)

