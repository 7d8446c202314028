"""The fields the Elasticsearch store adds to a chunk document for the search side."""

from __future__ import annotations

from typing import Any

from chunker.model import Chunk
from store.search_index import is_for_everyone
from store.search_terms import chunk_terms

# Fields of a chunk document that are not ``Chunk`` fields (left out when reading one).
STORE_FIELDS = (
    "indexed_at", "terms", "access_label_count", "scope_everyone", "embedding",
    "embedding_model",
)


def search_fields(chunk: Chunk) -> dict[str, Any]:
    """Analysed terms, the number of distinct labels (``terms_set``), the scope rule."""
    return {
        "terms": chunk_terms(chunk),
        "access_label_count": len(set(chunk.metadata.access_labels)),
        "scope_everyone": is_for_everyone(chunk.metadata.scope),
    }


def chunk_from_source(source: dict[str, Any]) -> Chunk:
    return Chunk.model_validate({k: v for k, v in source.items() if k not in STORE_FIELDS})
