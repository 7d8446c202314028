"""LangChain: ``PolicyRetriever`` (a ``BaseRetriever``) and ``search_policy_tool``.

Needs the ``langchain`` extra (``langchain-core``)::

    from policy_indexer_client.langchain import PolicyRetriever, search_policy_tool

    retriever = PolicyRetriever(scope=["city:berlin"], k=5)   # client from the environment
    documents = retriever.invoke("refund for a late delivery")
    documents[0].metadata["clause"], documents[0].metadata["run_id"]

Each passage is a ``Document``: its text as ``page_content``, every provenance field
in ``metadata`` (``policy_indexer_client.provenance``). A ``no_document`` or
``no_access`` answer is an empty list; the tool returns the whole response as JSON,
status and message included, so a model sees why nothing came back.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import StructuredTool
from pydantic import ConfigDict, Field

from policy_indexer_client.client import AsyncPolicyIndexerClient, PolicyIndexerClient
from policy_indexer_client.errors import ConfigurationError
from policy_indexer_client.models import SearchRequest, SearchResponse
from policy_indexer_client.provenance import passage_metadata

TOOL_NAME = "search_policy"
TOOL_DESCRIPTION = (
    "Search the policy library. Pass a specific question in plain English, including "
    "the seller and the order type if you know them. Returns passages with their scope "
    "and effective date; it does not decide the case. Cite a passage by its "
    "document_id, clause and version, and keep the run_id to check the citations."
)


def documents(response: SearchResponse) -> list[Document]:
    """One ``Document`` per passage (ranked, then neighbours), provenance in the metadata."""
    return [Document(page_content=p.text, id=p.chunk_id,
                     metadata=passage_metadata(p, response.run_id))
            for p in response.passages]


class PolicyRetriever(BaseRetriever):
    """Passages of ``POST /search`` as ``Document``s.

    ``client`` defaults to ``PolicyIndexerClient()`` (``POLICY_INDEXER_URL`` and
    ``POLICY_INDEXER_API_KEY``); ``async_client``, when given, serves ``ainvoke``
    (else the blocking client runs in a thread). The search options are fixed per
    retriever: ``scope``, ``as_of``, ``k``, ``neighbours``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: PolicyIndexerClient | None = None
    async_client: AsyncPolicyIndexerClient | None = None
    scope: list[str] = Field(default_factory=list)
    as_of: date | None = None
    k: int = 5
    neighbours: bool = True

    def model_post_init(self, context: Any, /) -> None:
        if self.client is None and self.async_client is None:
            self.client = PolicyIndexerClient()

    def _request(self, query: str) -> SearchRequest:
        return SearchRequest(question=query, scope=self.scope, as_of=self.as_of, k=self.k,
                             neighbours=self.neighbours)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.client is None:
            raise ConfigurationError(
                "this PolicyRetriever has only an async_client: use ainvoke, or pass client=")
        return documents(self.client.search(self._request(query)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        if self.async_client is None:
            return await super()._aget_relevant_documents(query, run_manager=run_manager)
        return documents(await self.async_client.search(self._request(query)))


def search_policy_tool(client: PolicyIndexerClient | None = None,
                       async_client: AsyncPolicyIndexerClient | None = None) -> StructuredTool:
    """The ``search_policy`` tool: the request's fields as arguments (no labels: the key's),
    the ``SearchResponse`` as JSON text."""
    if client is None and async_client is None:
        client = PolicyIndexerClient()

    def search_policy(**fields: Any) -> str:
        if client is None:
            raise ConfigurationError("search_policy_tool has only an async_client: use ainvoke")
        return client.search(SearchRequest(**fields)).model_dump_json()

    async def asearch_policy(**fields: Any) -> str:
        if async_client is None:
            return search_policy(**fields)
        return (await async_client.search(SearchRequest(**fields))).model_dump_json()

    return StructuredTool.from_function(
        func=search_policy, coroutine=asearch_policy, name=TOOL_NAME,
        description=TOOL_DESCRIPTION, args_schema=SearchRequest)
