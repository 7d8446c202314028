"""LlamaIndex: ``PolicyIndexRetriever``, passages of ``POST /search`` as ``NodeWithScore``.

Needs the ``llamaindex`` extra (``llama-index-core``)::

    from policy_indexer_client.llamaindex import PolicyIndexRetriever

    retriever = PolicyIndexRetriever(scope=["city:berlin"])   # client from the environment
    nodes = retriever.retrieve("refund for a late delivery")
    nodes[0].score, nodes[0].node.metadata["clause"]

Each node is a ``TextNode`` with the chunk id as its id, the passage's text, and the
same metadata as the LangChain documents (``policy_indexer_client.provenance``). The
LLM is shown only the citation fields (title, document id, clause, version, scope,
dates, link); nothing is embedded (the server ranked them already).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from datetime import date

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from policy_indexer_client.client import AsyncPolicyIndexerClient, PolicyIndexerClient
from policy_indexer_client.errors import ConfigurationError
from policy_indexer_client.models import SearchRequest, SearchResponse
from policy_indexer_client.provenance import CITATION_KEYS, passage_metadata


def nodes(response: SearchResponse) -> list[NodeWithScore]:
    """One scored ``TextNode`` per passage (ranked, then neighbours)."""
    found = []
    for passage in response.passages:
        metadata = passage_metadata(passage, response.run_id)
        node = TextNode(
            id_=passage.chunk_id, text=passage.text, metadata=metadata,
            excluded_llm_metadata_keys=[k for k in metadata if k not in CITATION_KEYS],
            excluded_embed_metadata_keys=list(metadata))
        found.append(NodeWithScore(node=node, score=passage.score))
    return found


class PolicyIndexRetriever(BaseRetriever):
    """``client`` defaults to ``PolicyIndexerClient()`` (the environment); ``async_client``,
    when given, serves ``aretrieve`` (else the blocking client runs in a thread)."""

    def __init__(self, client: PolicyIndexerClient | None = None, *,
                 async_client: AsyncPolicyIndexerClient | None = None,
                 scope: Iterable[str] = (), as_of: date | None = None, k: int = 5,
                 neighbours: bool = True, callback_manager: CallbackManager | None = None,
                 verbose: bool = False) -> None:
        if client is None and async_client is None:
            client = PolicyIndexerClient()
        self._client = client
        self._async_client = async_client
        self._scope = list(scope)
        self._as_of = as_of
        self._k = k
        self._neighbours = neighbours
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _request(self, query_bundle: QueryBundle) -> SearchRequest:
        return SearchRequest(question=query_bundle.query_str, scope=self._scope,
                             as_of=self._as_of, k=self._k, neighbours=self._neighbours)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self._client is None:
            raise ConfigurationError("this PolicyIndexRetriever has only an async_client: "
                                     "use aretrieve, or pass client=")
        return nodes(self._client.search(self._request(query_bundle)))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self._async_client is None:
            return await asyncio.to_thread(self._retrieve, query_bundle)
        return nodes(await self._async_client.search(self._request(query_bundle)))
