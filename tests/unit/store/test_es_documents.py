"""What an Elasticsearch chunk document holds: the whole chunk, derived ``embed_text`` included."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from support.chunks import make_chunk

from store.elasticsearch import ElasticsearchStore
from store.es_search_fields import STORE_FIELDS, chunk_from_source

pytestmark = pytest.mark.services


@pytest.fixture
def store(elasticsearch_url: str) -> Iterator[ElasticsearchStore]:
    s = ElasticsearchStore.connect(elasticsearch_url, f"t{uuid.uuid4().hex[:12]}")
    s.ensure_ready()
    try:
        yield s
    finally:
        s.delete_everything()
        s.close()


def test_embed_text_is_indexed_and_the_document_reads_back_as_the_chunk(
    store: ElasticsearchStore,
) -> None:
    chunk = make_chunk(
        "refund", 2, "sale", heading_path=["Refunds", "Exclusions"], text="Sale items."
    )
    store.write_chunks([chunk])
    store.refresh()
    source = store.client.get(index=store.names.chunks, id=chunk.chunk_id)["_source"]
    assert source["embed_text"] == "Refunds > Exclusions\nSale items."
    # the store's own fields (indexed_at, the search side's) are left out when reading back
    assert set(source) - set(chunk.model_dump()) <= set(STORE_FIELDS)
    assert chunk_from_source(source) == chunk
    # a heading word is only in embed_text (heading_path is its own field): found through it
    hits = store.client.search(
        index=store.names.chunks, query={"match": {"embed_text": "exclusions"}}
    )["hits"]["hits"]
    assert [hit["_id"] for hit in hits] == [chunk.chunk_id]
