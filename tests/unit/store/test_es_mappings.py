from __future__ import annotations

from chunker.model import Chunk, DocumentMetadata, Neighbours
from store.es_mappings import CHUNK_PROPERTIES


def test_every_chunk_field_has_an_explicit_mapping() -> None:
    assert set(Chunk.model_fields) | set(Chunk.model_computed_fields) <= set(CHUNK_PROPERTIES)
    assert set(DocumentMetadata.model_fields) == set(CHUNK_PROPERTIES["metadata"]["properties"])
    assert set(Neighbours.model_fields) == set(CHUNK_PROPERTIES["neighbours"]["properties"])


def test_ids_and_labels_are_keywords_and_texts_use_the_standard_analyzer() -> None:
    for name in ("chunk_id", "document_id", "section", "content_type"):
        assert CHUNK_PROPERTIES[name]["type"] == "keyword"
    assert CHUNK_PROPERTIES["metadata"]["properties"]["access_labels"] == {"type": "keyword"}
    for name in ("text", "embed_text"):
        assert CHUNK_PROPERTIES[name] == {"type": "text", "analyzer": "standard"}
