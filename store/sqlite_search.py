"""Search over ``SQLiteStore``: FTS5 over analysed terms, numpy cosine over stored vectors.

Every filter is in the SQL (``store.sqlite_schema.FILTERS``). The keyword leg
is FTS5's BM25 over ``chunk_terms`` (terms analysed in Python, see
``store.search_terms``). The dense leg reads the float32 vectors of the rows
the filters allow and ranks them by dot product (vectors are unit length):
brute force over a matrix read once and kept until the database changes,
ranked, then walked in order with the filters checked in SQL a block at a
time, so the result is exactly the best rows the filters allow; the cost is
linear in the chunks: 1.5 kB of memory and one dot product per chunk and
query (docs/search.md has the figures and where it stops being fine).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from chunker.model import Chunk
from store.search import SearchHit
from store.search_index import SearchFilters, Vector, check_limit
from store.search_terms import text_to_embed
from store.sqlite import SQLiteStore
from store.sqlite_schema import (
    ADMITTED_ROWIDS,
    BY_IDS,
    FILTERED,
    KEYWORD_SEARCH,
    MISSING_VECTORS,
    caller_labels_param,
)

MAX_TERMS = 256


def _params(filters: SearchFilters) -> dict[str, Any]:
    labels = filters.caller_labels
    return {
        "as_of": filters.as_of.isoformat(),
        "any_scope": int(not filters.scope),
        "scope": json.dumps(list(filters.scope)),
        "no_permission": int(labels is None),
        "caller_labels": caller_labels_param(labels or ()),
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
        self._cache: dict[
            str, tuple[tuple[int, int], npt.NDArray[np.int64], npt.NDArray[np.float32]]
        ] = {}

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
        rowids, matrix = self._vectors(model_id)
        if not len(rowids):
            return []
        query = np.asarray(vector, dtype=np.float32)
        if matrix.shape[1] != query.shape[0]:
            raise ValueError(
                f"model_id={model_id!r}: stored vectors have {matrix.shape[1]} dimensions, "
                f"the query {query.shape[0]}"
            )
        scores = matrix @ query
        order = np.argsort(-scores, kind="stable")
        # Walk the global order, checking the filters in SQL a block at a time (blocks grow
        # 4x): the first `limit` rows that pass are exactly the best `limit` the filters
        # allow, and the usual search reads a few dozen rows, not every row's filters.
        picked: list[int] = []  # indexes into rowids, best first
        start, step = 0, max(4 * limit, 64)
        while len(picked) < limit and start < len(order):
            block = order[start : start + step]
            start, step = start + step, step * 4
            admitted = {r for (r,) in self.store._read(
                "vector candidates", ADMITTED_ROWIDS,
                {**_params(filters), "rowids": json.dumps([int(rowids[i]) for i in block])},
            )}
            picked += [int(i) for i in block if int(rowids[i]) in admitted]
        picked = picked[:limit]
        bodies = dict(self.store._read(
            "vector hits",
            "SELECT rowid, body FROM chunks WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps([int(rowids[i]) for i in picked]),),
        ))
        return [
            SearchHit(Chunk.model_validate_json(bodies[int(rowids[i])]), float(scores[i]))
            for i in picked
            if int(rowids[i]) in bodies
        ]

    def _vectors(self, model_id: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Every vector of the model, read once and kept until the database changes.

        The key is this connection's change count and SQLite's ``data_version``
        (which moves when another connection commits), so any write, here or in
        another process, is seen by the next search: never a stale vector.
        """
        with self.store._lock:
            conn = self.store._conn
            key = (conn.total_changes, conn.execute("PRAGMA data_version").fetchone()[0])
        cached = self._cache.get(model_id)
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        rows = self.store._read(
            "read vectors",
            "SELECT chunk_rowid, vector FROM chunk_vectors WHERE model_id = ? ORDER BY chunk_rowid",
            (model_id,),
        )
        rowids = np.asarray([r for r, _ in rows], dtype=np.int64)
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
        matrix = matrix.reshape(len(rows), -1) if rows else matrix.reshape(0, 0)
        self._cache = {model_id: (key, rowids, matrix)}
        return rowids, matrix

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
