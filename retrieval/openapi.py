"""The OpenAPI 3.1 document of the search app, generated from the pydantic models.

``openapi_document(citations=...)`` describes what ``create_search_app`` serves:
``POST /search`` (``SearchRequest`` -> ``SearchResponse``), ``POST /citations/check``
(``CheckRequest`` -> ``CheckResponse``, when the app has a checker), ``GET /healthz``
and ``GET /readyz``, with every refusal of ``retrieval.http`` as an ``Error`` body.
The schemas are the models' own JSON Schemas (requests as validated, responses as
serialized), so the document cannot drift from the code; ``GET /openapi.json``
serves it without a key (it holds no data). The metrics route is left out: it is for
a scraper with its own token, not for API callers.
"""

from __future__ import annotations

from functools import cache
from importlib import metadata
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from retrieval.citations import TOOL_DESCRIPTION as CHECK_DESCRIPTION
from retrieval.citations import CheckRequest, CheckResponse
from retrieval.models import TOOL_DESCRIPTION as SEARCH_DESCRIPTION
from retrieval.models import SearchRequest, SearchResponse

OPENAPI_ROUTE = "/openapi.json"
_REF = "#/components/schemas/{model}"


class FieldError(BaseModel):
    """One field a 422 names: where, why, and the value sent (shortened)."""

    loc: list[str | int]
    msg: str
    type: str
    input: Any = None


class Error(BaseModel):
    """Every refusal: a code, one sentence saying what was wrong, and for a 422 the fields."""

    model_config = ConfigDict(title="Error")

    error: str = Field(description="A code: unauthorized, invalid_request, unknown_run, ...")
    detail: str = Field(description="What was wrong, naming the field and value.")
    errors: list[FieldError] | None = None


class Status(BaseModel):
    status: str = Field(description="ok, or unavailable")
    last_error: str | None = Field(None, description="Why the index cannot be searched now.")


def _version() -> str:
    try:
        return metadata.version("policy-indexer")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def _refusals(*extra: tuple[str, str]) -> dict[str, Any]:
    error = {"content": {"application/json": {"schema": {"$ref": _REF.format(model="Error")}}}}
    described = [
        ("400", "Not JSON, not a JSON object, nested too deep, a lone surrogate, NaN."),
        ("401", "No API key, not 'Bearer <key>', or a key the server does not know."),
        ("413", "The body is larger than the server takes."),
        ("415", "A content type other than application/json (UTF-8)."),
        ("422", "Not a valid request: `detail` and `errors` name each field and value. "
                "A `labels` field is refused: labels come from the API key."),
        *extra,
        ("500", "The server failed; it has logged why (the body says nothing of it)."),
    ]
    return {code: {"description": text, **error} for code, text in described}


def _post(operation_id: str, summary: str, description: str, request: str, response: str,
          *extra: tuple[str, str]) -> dict[str, Any]:
    return {"post": {
        "operationId": operation_id,
        "summary": summary,
        "description": description,
        "security": [{"apiKey": []}],
        "requestBody": {"required": True, "content": {
            "application/json": {"schema": {"$ref": _REF.format(model=request)}}}},
        "responses": {
            "200": {"description": summary, "content": {
                "application/json": {"schema": {"$ref": _REF.format(model=response)}}}},
            **_refusals(*extra),
        },
    }}


def _probe(operation_id: str, summary: str, ready: bool) -> dict[str, Any]:
    status = {"application/json": {"schema": {"$ref": _REF.format(model="Status")}}}
    responses: dict[str, Any] = {"200": {"description": "ok", "content": status}}
    if ready:
        responses["503"] = {"description": "The index cannot be searched now (last_error).",
                            "content": status}
    return {"get": {"operationId": operation_id, "summary": summary,
                    "security": [], "responses": responses}}


@cache
def openapi_document(*, citations: bool = True) -> dict[str, Any]:
    """The document; ``citations``: with ``POST /citations/check``. Do not mutate it."""
    models: list[tuple[type[BaseModel], Any]] = [
        (SearchRequest, "validation"), (SearchResponse, "serialization"),
        (Error, "serialization"), (Status, "serialization"),
    ]
    if citations:
        models += [(CheckRequest, "validation"), (CheckResponse, "serialization")]
    names, schema = models_json_schema(models, ref_template=_REF)
    # a model that validates and serializes alike has one name; else "-Input"/"-Output"
    ref = {model: names[(model, mode)]["$ref"].rsplit("/", 1)[1] for model, mode in models}
    paths: dict[str, Any] = {
        "/search": _post("search_policy", "Search the policy library", SEARCH_DESCRIPTION,
                         ref[SearchRequest], ref[SearchResponse]),
        "/healthz": _probe("healthz", "The process lives", ready=False),
        "/readyz": _probe("readyz", "The index can be searched", ready=True),
    }
    if citations:
        paths["/citations/check"] = _post(
            "check_citations", "Check a reply's citations", CHECK_DESCRIPTION,
            ref[CheckRequest], ref[CheckResponse],
            ("404", "unknown_run: this API key has no run of that id (never recorded, "
                    "pruned, or another key's)."))
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "policy-indexer search API",
            "version": _version(),
            "description": "search_policy and check_citations over HTTP. The caller's "
                           "labels come from its API key (Authorization: Bearer <key>), "
                           "never from the request.",
        },
        "paths": paths,
        "components": {
            "schemas": schema.get("$defs", {}),
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer",
                                           "description": "A key of "
                                           "POLICY_INDEXER_SEARCH_API_KEYS."}},
        },
    }
