"""The index templates the project owns: one for chunks, one for document states.

Every field of ``chunker.model.Chunk`` has an explicit mapping (a unit test
checks none is missing). ``dynamic: false`` keeps a field added to the chunk
model later from turning every write into a rejection: it is stored but not
searchable until it is mapped here. The minimal Elasticsearch distribution has
no language analyzers, so text fields use ``standard``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

KEYWORD: dict[str, Any] = {"type": "keyword"}
DATE: dict[str, Any] = {"type": "date"}
TEXT: dict[str, Any] = {"type": "text", "analyzer": "standard"}

CHUNK_PROPERTIES: dict[str, Any] = {
    "chunk_id": KEYWORD,
    "document_id": KEYWORD,
    "version": {"type": "long"},
    "section": KEYWORD,
    "ordinal": {"type": "integer"},
    "heading_path": {
        "type": "text",
        "analyzer": "standard",
        "fields": {"keyword": {"type": "keyword", "ignore_above": 1024}},
    },
    "text": TEXT,
    "embed_text": TEXT,
    "char_start": {"type": "integer"},
    "char_end": {"type": "integer"},
    "token_count": {"type": "integer"},
    "part": {"type": "integer"},
    "parts": {"type": "integer"},
    # Table header rows repeated at the start of ``text``: already searchable there.
    "repeated_header": {"type": "text", "analyzer": "standard", "index": False},
    "unsplittable": {"type": "boolean"},
    "neighbours": {
        "properties": {"previous": KEYWORD, "next": KEYWORD, "related": KEYWORD},
    },
    "metadata": {
        "properties": {
            "title": {**TEXT, "fields": {"keyword": {"type": "keyword", "ignore_above": 1024}}},
            "scope": KEYWORD,
            "valid_from": DATE,
            "valid_to": DATE,
            "effective_date": DATE,
            # No ignore_above: a permission label silently left out of the
            # index would make a restricted chunk look unrestricted.
            "access_labels": KEYWORD,
            "keywords": KEYWORD,
            "source_path": KEYWORD,
            "language": KEYWORD,
            # Returned on the passage, never searched: any JSON, so not mapped.
            "attributes": {"type": "object", "enabled": False},
        },
    },
    "content_type": KEYWORD,
    "changed_at": DATE,
    # Set by the store, not the chunker: when this chunk was written.
    "indexed_at": DATE,
    # The search side (store.es_search): analysed terms (analysis/, so a whitespace
    # analyzer: the same terms as SQLite), the label count terms_set needs, the scope rule.
    "terms": {"type": "text", "analyzer": "whitespace", "similarity": "BM25"},
    "access_label_count": {"type": "integer"},
    "scope_everyone": {"type": "boolean"},
    "embedding_model": KEYWORD,
}

DEFAULT_VECTOR_DIMS = 384
VIEW_FIELD_PREFIX = "dense_"


def view_field(view_id: str) -> str:
    """The chunk field holding a dense view's vectors (``embeddings.views``): a readable
    part of the id and a hash of all of it, so two ids never share a field."""
    readable = re.sub(r"[^a-z0-9]+", "_", view_id.lower()).strip("_")[:60]
    return f"{VIEW_FIELD_PREFIX}{readable}_{hashlib.sha256(view_id.encode()).hexdigest()[:10]}"


def view_property(dims: int) -> dict[str, Any]:
    """A view's vectors: nested, a row each (one, or one per window), ``v`` a cosine
    ``dense_vector``; kNN over it scores a chunk by its best row."""
    if not isinstance(dims, int) or not 1 <= dims <= 4096:
        raise ValueError(f"vector dims={dims!r}: must be an integer from 1 to 4096")
    return {"type": "nested", "properties": {
        "v": {"type": "dense_vector", "dims": dims, "index": True, "similarity": "cosine"},
    }}


def chunk_properties(vector_dims: int = DEFAULT_VECTOR_DIMS) -> dict[str, Any]:
    """The chunk mapping with its ``dense_vector`` (cosine, HNSW) of ``vector_dims``."""
    if not isinstance(vector_dims, int) or not 1 <= vector_dims <= 4096:
        raise ValueError(f"vector_dims={vector_dims!r}: must be an integer from 1 to 4096")
    return {
        **CHUNK_PROPERTIES,
        "embedding": {
            "type": "dense_vector", "dims": vector_dims, "index": True, "similarity": "cosine",
        },
    }

STATE_PROPERTIES: dict[str, Any] = {
    "document_id": KEYWORD,
    "version": {"type": "long"},
    "changed_at": DATE,
    "indexed_at": DATE,
    "chunk_ids": KEYWORD,
    "superseded_chunk_ids": KEYWORD,
    "content_hash": KEYWORD,
    "deleted": {"type": "boolean"},
    "tombstone_version": {"type": "long"},
    # The source that owns the document (one owner per document); absent: unowned.
    "owner": KEYWORD,
}


@dataclass(frozen=True)
class IndexLayout:
    """Shards and replicas of every index the store creates.

    One shard and no replica suit one node (a replica could never be placed and
    the index would stay yellow); on a cluster, one replica or more. A change
    applies to the next index the template makes, not to existing ones.
    """

    shards: int = 1
    replicas: int = 0

    def __post_init__(self) -> None:
        if self.shards < 1:
            raise ValueError(f"shards must be at least 1, got {self.shards!r}")
        if self.replicas < 0:
            raise ValueError(f"replicas must be 0 or more, got {self.replicas!r}")


def template_body(
    pattern: str, properties: dict[str, Any], layout: IndexLayout | None = None
) -> dict[str, Any]:
    layout = layout or ONE_NODE
    return {
        "index_patterns": [pattern],
        "priority": 200,
        "template": {
            "settings": {"number_of_shards": layout.shards,
                         "number_of_replicas": layout.replicas},
            "mappings": {"dynamic": False, "properties": properties},
        },
        "_meta": {"owner": "policy-indexer", "description": "managed by store/es_mappings.py"},
    }


# One shard, no replica: one node (the local services, the tests).
ONE_NODE = IndexLayout()
