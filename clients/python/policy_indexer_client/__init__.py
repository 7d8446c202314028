"""A typed client of policy-indexer's HTTP API (``POST /search``, ``POST /citations/check``),
and retrievers for the frameworks agents are built with.

- ``PolicyIndexerClient`` / ``AsyncPolicyIndexerClient``: ``search`` and ``check_citations``;
- ``policy_indexer_client.langchain``: ``PolicyRetriever`` (a LangChain ``BaseRetriever``)
  and ``search_policy_tool`` (extra ``langchain``);
- ``policy_indexer_client.llamaindex``: ``PolicyIndexRetriever`` (extra ``llamaindex``).

Only httpx and pydantic are needed for the client; the framework modules import their
framework when they are imported, not before.
"""

from policy_indexer_client.client import (
    API_KEY_ENV,
    URL_ENV,
    AsyncPolicyIndexerClient,
    PolicyIndexerClient,
)
from policy_indexer_client.errors import (
    ApiError,
    AuthenticationError,
    ConfigurationError,
    InvalidRequestError,
    PolicyIndexerError,
    ServiceUnavailableError,
    TransportError,
    UnknownRunError,
)
from policy_indexer_client.models import (
    CheckRequest,
    CheckResponse,
    Citation,
    CitationResult,
    Freshness,
    Passage,
    Problem,
    SearchRequest,
    SearchResponse,
)
from policy_indexer_client.provenance import passage_metadata
from policy_indexer_client.retry import RetryPolicy

__all__ = [
    "API_KEY_ENV",
    "URL_ENV",
    "ApiError",
    "AsyncPolicyIndexerClient",
    "AuthenticationError",
    "CheckRequest",
    "CheckResponse",
    "Citation",
    "CitationResult",
    "ConfigurationError",
    "Freshness",
    "InvalidRequestError",
    "Passage",
    "PolicyIndexerClient",
    "PolicyIndexerError",
    "Problem",
    "RetryPolicy",
    "SearchRequest",
    "SearchResponse",
    "ServiceUnavailableError",
    "TransportError",
    "UnknownRunError",
    "passage_metadata",
]
