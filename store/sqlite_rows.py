"""The search rows of a chunk in the embedded store, written in the chunk's own transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chunker.model import Chunk
from store.search_index import is_for_everyone
from store.search_terms import chunk_terms
from store.sqlite_schema import DROP_TERMS, PUT_FILTERS, PUT_TERMS


def search_rows(chunk: Chunk) -> list[tuple[str, Sequence[Any]]]:
    """The statements that keep a chunk's search rows; run after its upsert, same transaction."""
    meta = chunk.metadata
    return [
        (PUT_FILTERS, (
            meta.valid_from.isoformat() if meta.valid_from else None,
            meta.valid_to.isoformat() if meta.valid_to else None,
            json.dumps(meta.scope), int(is_for_everyone(meta.scope)), meta.language,
            chunk.chunk_id,
        )),
        (DROP_TERMS, (chunk.chunk_id,)),
        (PUT_TERMS, (chunk_terms(chunk), chunk.chunk_id)),
    ]
