"""Search over ``SQLiteStore``: FTS5 over analysed terms, numpy cosine over stored vectors.

Every filter is in the SQL (``store.sqlite_schema.FILTERS``). The keyword leg
is FTS5's BM25 over ``chunk_terms`` (terms analysed in Python, see
``store.search_terms``). The dense leg reads the float32 vectors of the rows
the filters allow and ranks them by dot product (vectors are unit length):
brute force, which ``bench/bench_retrieval.py`` times; it is linear in the
chunks that pass the filters (a 384-dim vector is 1.5 kB: 10k chunks are
15 MB read per query), see docs/search.md for where it stops being fine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from chunker.model import Chunk
from store.search import SearchHit
from store.search_index import SearchFilters, Vector, check_limit
from store.search_terms import text_to_embed
from store.sqlite import SQLiteStore
from store.sqlite_schema import (
    BY_IDS,
    FILTERED,
    KEYWORD_SEARCH,
    MISSING_VECTORS,
    VECTOR_CANDIDATES,
)

MAX_TERMS = 256


def _params(filters: SearchFilters) -> dict[str, Any]:
    labels = filters.caller_labels
    return {
        "as_of": filters.as_of.isoformat(),
        "any_scope": int(not filters.scope),
        "scope": json.dumps(list(filters.scope)),
        "no_permission": int(labels is None),
        "caller_labels": json.dumps(sorted(labels or ())),
    }


def _match(terms: Sequence[str]) -> str | None:
    """Any of the terms, each quoted: no input can turn into FTS5 syntax."""
    unique = list(dict.fromkeys(t for t in terms if t))[:MAX_TERMS]
    if not unique:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)


class SQLiteSearchIndex:
    """Implements ``SearchIndex`` and ``VectorStore`` over a ``SQLiteStore``."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def keyword_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[SearchHit]:
        match = _match(terms)
        if match is None:
            return []
        rows = self.store._read(
            "keyword search", KEYWORD_SEARCH,
            {**_params(filters), "match": match, "limit": check_limit(limit)},
        )
        return [SearchHit(Chunk.model_validate_json(body), float(score)) for body, score in rows]

    def vector_search(
        self, model_id: str, vector: Vector, filters: SearchFilters, limit: int
    ) -> list[SearchHit]:
        check_limit(limit)
        rows = self.store._read(
            "vector search", VECTOR_CANDIDATES, {**_params(filters), "model_id": model_id}
        )
        if not rows:
            return []
        query = np.asarray(vector, dtype=np.float32)
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
        matrix = matrix.reshape(len(rows), -1)
        if matrix.shape[1] != query.shape[0]:
            raise ValueError(
                f"model_id={model_id!r}: stored vectors have {matrix.shape[1]} dimensions, "
                f"the query {query.shape[0]}"
            )
        scores = matrix @ query
        best = np.argsort(-scores, kind="stable")[:limit]
        rowids = [int(rows[i][0]) for i in best]
        bodies = dict(self.store._read(
            "vector hits",
            "SELECT rowid, body FROM chunks WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps(rowids),),
        ))
        return [
            SearchHit(Chunk.model_validate_json(bodies[r]), float(scores[i]))
            for r, i in zip(rowids, best, strict=True)
            if r in bodies
        ]

    def filtered_chunks(self, filters: SearchFilters, limit: int) -> list[Chunk]:
        rows = self.store._read(
            "filtered chunks", FILTERED, {**_params(filters), "limit": check_limit(limit)}
        )
        return [Chunk.model_validate_json(body) for (body,) in rows]

    def get_chunks(self, chunk_ids: Sequence[str], filters: SearchFilters) -> list[Chunk]:
        if not chunk_ids:
            return []
        rows = self.store._read(
            "chunks by id", BY_IDS, {**_params(filters), "ids": json.dumps(list(chunk_ids))}
        )
        return [Chunk.model_validate_json(body) for (body,) in rows]

    # -- VectorStore -------------------------------------------------------
    def chunks_missing_vectors(self, model_id: str, limit: int) -> list[tuple[str, str]]:
        rows = self.store._read(
            "chunks missing vectors", MISSING_VECTORS + " LIMIT :limit",
            {"model_id": model_id, "limit": check_limit(limit)},
        )
        return [(cid, text_to_embed(Chunk.model_validate_json(body))) for cid, body, _ in rows]

    def put_vectors(self, model_id: str, vectors: Mapping[str, Sequence[float]]) -> int:
        statements = [
            (
                "INSERT OR REPLACE INTO chunk_vectors(chunk_rowid, model_id, vector) "
                "SELECT rowid, ?, ? FROM chunks WHERE chunk_id = ?",
                (model_id, np.asarray(vector, dtype=np.float32).tobytes(), cid),
            )
            for cid, vector in vectors.items()
        ]
        if not statements:
            return 0
        return sum(self.store._write("put vectors", statements))

    def vector_backlog(self, model_id: str) -> tuple[int, datetime | None]:
        rows = self.store._read(
            "vector backlog",
            f"SELECT count(*), min(indexed_at) FROM ({MISSING_VECTORS})",  # noqa: S608
            {"model_id": model_id},
        )
        count, oldest = rows[0]
        return int(count), datetime.fromisoformat(oldest) if oldest else None
