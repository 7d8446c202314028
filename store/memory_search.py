"""Search over ``InMemoryStore``: the filters and BM25 in Python, vectors in a dict.

The reference implementation of ``store.search_index``: small, obviously
right, and what the unit tests of the ranking run on. BM25 here is Okapi
(k1=1.2, b=0.75, the defaults of Lucene and FTS5), over the current chunks.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from chunker.model import Chunk
from store.memory import InMemoryStore
from store.search import SearchHit
from store.search_index import SearchFilters, Vector, check_limit, vector_rows
from store.search_terms import chunk_terms, text_to_embed

K1 = 1.2
B = 0.75


class InMemorySearchIndex:
    """Implements ``SearchIndex`` and ``VectorStore`` over an ``InMemoryStore``."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._terms: dict[str, tuple[str, Counter[str]]] = {}  # chunk id -> (text, counts)
        # chunk id -> view id -> its vectors, a row each (one row, or one per window)
        self._vectors: dict[str, dict[str, npt.NDArray[np.float32]]] = {}

    # -- helpers -----------------------------------------------------------
    def _live(self) -> list[tuple[Chunk, datetime]]:
        """Chunks of each document's current, not deleted, version."""
        with self.store._lock:
            states = dict(self.store.states)
            items = list(self.store.chunks.values())
        return [
            (chunk, at)
            for chunk, at in items
            if (s := states.get(chunk.document_id)) is not None
            and not s.deleted
            and s.version == chunk.version
        ]

    def _counts(self, chunk: Chunk) -> Counter[str]:
        with self._lock:
            cached = self._terms.get(chunk.chunk_id)
            if cached is not None and cached[0] == chunk.embed_text:
                return cached[1]
        counts = Counter(chunk_terms(chunk).split())
        with self._lock:
            self._terms[chunk.chunk_id] = (chunk.embed_text, counts)
        return counts

    def _admitted(self, filters: SearchFilters) -> list[Chunk]:
        return sorted(
            (c for c, _ in self._live() if filters.admits(c)), key=lambda c: c.chunk_id
        )

    # -- SearchIndex -------------------------------------------------------
    def keyword_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[SearchHit]:
        check_limit(limit)
        wanted = list(dict.fromkeys(terms))
        if not wanted:
            return []
        live = [c for c, _ in self._live()]
        if not live:
            return []
        counts = {c.chunk_id: self._counts(c) for c in live}
        lengths = {cid: sum(n.values()) for cid, n in counts.items()}
        average = sum(lengths.values()) / len(lengths) or 1.0
        frequency = {t: sum(1 for n in counts.values() if t in n) for t in wanted}
        hits: list[SearchHit] = []
        for chunk in live:
            if not filters.admits(chunk):
                continue
            n = counts[chunk.chunk_id]
            score = 0.0
            for term in wanted:
                tf = n.get(term, 0)
                if not tf:
                    continue
                idf = math.log(1 + (len(live) - frequency[term] + 0.5) / (frequency[term] + 0.5))
                norm = tf + K1 * (1 - B + B * lengths[chunk.chunk_id] / average)
                score += idf * tf * (K1 + 1) / norm
            if score > 0:
                hits.append(SearchHit(chunk, score))
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits[:limit]

    def vector_search(
        self, model_id: str, vector: Vector, filters: SearchFilters, limit: int
    ) -> list[SearchHit]:
        check_limit(limit)
        with self._lock:
            vectors = {cid: views[model_id] for cid, views in self._vectors.items()
                       if model_id in views}
        hits = []
        query = np.asarray(vector, dtype=np.float32)
        for chunk, _ in self._live():
            stored = vectors.get(chunk.chunk_id)
            if stored is None or not filters.admits(chunk):
                continue
            hits.append(SearchHit(chunk, float(np.max(stored @ query))))  # its best window
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits[:limit]

    def filtered_chunks(self, filters: SearchFilters, limit: int) -> list[Chunk]:
        return self._admitted(filters)[: check_limit(limit)]

    def get_chunks(self, chunk_ids: Sequence[str], filters: SearchFilters) -> list[Chunk]:
        wanted = set(chunk_ids)
        return [c for c, _ in self._live() if c.chunk_id in wanted and filters.admits(c)]

    def read_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        wanted = set(chunk_ids)
        with self.store._lock:
            return [c for cid, (c, _) in self.store.chunks.items() if cid in wanted]

    def without_vectors(self, model_id: str, chunk_ids: Sequence[str]) -> set[str]:
        with self._lock:
            return {cid for cid in chunk_ids if model_id not in self._vectors.get(cid, {})}

    # -- VectorStore -------------------------------------------------------
    def _missing(self, model_id: str) -> list[tuple[Chunk, datetime]]:
        with self._lock:
            have = {cid for cid, views in self._vectors.items() if model_id in views}
        missing = [(c, at) for c, at in self._live() if c.chunk_id not in have]
        return sorted(missing, key=lambda item: (item[1], item[0].chunk_id))

    def chunks_missing_vectors(self, model_id: str, limit: int) -> list[tuple[str, str]]:
        return [(c.chunk_id, text_to_embed(c)) for c, _ in self._missing(model_id)[:limit]]

    def put_vectors(
        self, model_id: str, vectors: Mapping[str, Sequence[float] | Sequence[Sequence[float]]]
    ) -> int:
        rows = {cid: vector_rows(vector) for cid, vector in vectors.items()}
        with self.store._lock:
            present = set(self.store.chunks)
        stored = 0
        with self._lock:
            for cid, matrix in rows.items():
                if cid in present:
                    self._vectors.setdefault(cid, {})[model_id] = matrix
                    stored += 1
            for cid in [c for c in self._vectors if c not in present]:
                del self._vectors[cid]  # chunks deleted since: their vectors go too
        return stored

    def vector_backlog(self, model_id: str) -> tuple[int, datetime | None]:
        missing = self._missing(model_id)
        return len(missing), (missing[0][1] if missing else None)
