"""``GET /openapi.json``: the search app's OpenAPI 3.1 document, generated from the models,
valid by ``openapi-spec-validator``, served without a key, listing the routes the app has.
"""

from __future__ import annotations

import httpx
from openapi_spec_validator import validate
from prometheus_client import CollectorRegistry
from support.mcp_searcher import LabelFilteringSearcher, sample_passages

from retrieval.credentials import Credentials
from retrieval.http import create_search_app
from retrieval.models import SearchRequest
from retrieval.openapi import openapi_document
from webhooks.serve import ServerThread

CREDENTIALS = Credentials.from_mapping({
    "support-bot": {"key": "agent-key-0123456789abcdef", "labels": ["public"]}})


def test_both_documents_are_valid_openapi() -> None:
    for citations in (True, False):
        validate(openapi_document(citations=citations))  # raises naming the fault


def test_the_schemas_are_the_models_and_every_refusal_is_described() -> None:
    document = openapi_document()
    schemas = document["components"]["schemas"]
    assert set(schemas["SearchRequest"]["properties"]) == set(SearchRequest.model_fields)
    assert "labels" not in schemas["SearchRequest"]["properties"]
    assert schemas["SearchRequest"]["additionalProperties"] is False
    search = document["paths"]["/search"]["post"]
    assert search["operationId"] == "search_policy" and search["security"] == [{"apiKey": []}]
    assert {"200", "400", "401", "413", "415", "422", "500"} <= set(search["responses"])
    check = document["paths"]["/citations/check"]["post"]
    assert "404" in check["responses"]
    assert document["paths"]["/readyz"]["get"]["security"] == []


def test_the_app_serves_the_document_of_its_own_routes_without_a_key() -> None:
    app = create_search_app(LabelFilteringSearcher(sample_passages()), CREDENTIALS,
                            CollectorRegistry())
    with ServerThread(app) as server:
        response = httpx.get(server.url + "/openapi.json", timeout=10)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    document = response.json()
    assert document == openapi_document(citations=False)
    assert "/citations/check" not in document["paths"]  # this app has no checker
