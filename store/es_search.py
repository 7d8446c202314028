"""Search over ``ElasticsearchStore``: BM25 and kNN in one ``_msearch``, filters inside both.

The minimal distribution has no RRF retriever (and a full one needs a paid
licence for it), so the two legs come back as two lists and
``retrieval.service`` fuses them. Scope, date and permission filters are
``bool`` filters inside the BM25 query and inside ``knn.filter`` (kNN with a
post-filter would return fewer than k); the permission rule is ``terms_set``
over the chunk's labels with the per-chunk label count as the minimum.

**Current version only** cannot be a join here. The legs over-fetch
(``OVERFETCH``) and each hit is checked against its document's state, read in
real time with one ``mget``; a hit of another version (between a chunk write
and its state write, or an old version the delete step has yet to remove) is
dropped. Old versions live for seconds (the delete step runs right after the
state write), so over-fetching by a margin almost always suffices; when it
does not, the leg is asked again for more (``_live_hits``). A flag on the
chunks that the delete step clears was the alternative: it would need the
writer, the delete step and the reindex to keep one more field right, for a
case that only lasts until the delete step runs.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from chunker.model import Chunk
from foundation.es_errors import is_transient_status
from store.elasticsearch import ElasticsearchStore
from store.errors import StoreError, TransientStoreError
from store.es_mappings import VIEW_FIELD_PREFIX, view_field
from store.es_requests import bulk, parse_dt, translate
from store.es_search_fields import chunk_from_source
from store.search import SearchHit
from store.search_index import SearchFilters, Vector, check_limit, vector_rows
from store.search_terms import text_to_embed

OVERFETCH = 1
MARGIN = 10  # old versions live seconds; a short leg is asked again (_live_hits)
NUM_CANDIDATES_FACTOR = 4
# embed_text is derived (re-checking it costs half of reading a chunk), terms and vectors unused
_SOURCE = {"excludes": ["terms", "embedding", "embed_text", f"{VIEW_FIELD_PREFIX}*"]}


def filter_clauses(filters: SearchFilters) -> list[dict[str, Any]]:
    """Every filter of ``store.search_index`` as Elasticsearch ``bool`` filters."""
    day = filters.as_of.isoformat()
    clauses: list[dict[str, Any]] = [
        _missing_or("metadata.valid_from", {"range": {"metadata.valid_from": {"lte": day}}}),
        _missing_or("metadata.valid_to", {"range": {"metadata.valid_to": {"gte": day}}}),
    ]
    if filters.scope:
        clauses.append({"bool": {"should": [
            {"term": {"scope_everyone": True}},
            {"terms": {"metadata.scope": list(filters.scope)}},
        ], "minimum_should_match": 1}})
    labels = filters.caller_labels
    if labels is not None:
        unlabelled = {"bool": {"must_not": {"exists": {"field": "metadata.access_labels"}}}}
        if not labels:
            clauses.append(unlabelled)
        else:
            clauses.append({"bool": {"should": [
                unlabelled,
                {"terms_set": {"metadata.access_labels": {
                    "terms": sorted(labels),
                    "minimum_should_match_field": "access_label_count",
                }}},
            ], "minimum_should_match": 1}})
    return clauses


def _missing_or(field: str, clause: dict[str, Any]) -> dict[str, Any]:
    return {"bool": {"should": [
        {"bool": {"must_not": {"exists": {"field": field}}}}, clause,
    ], "minimum_should_match": 1}}


class ElasticsearchSearchIndex:
    """Implements ``SearchIndex`` and ``VectorStore`` over an ``ElasticsearchStore``."""

    def __init__(self, store: ElasticsearchStore) -> None:
        self.store = store
        self.client = store.client
        self.index = store.names.chunks

    # -- the two legs in one request --------------------------------------
    def both_legs(
        self,
        terms: Sequence[str],
        vectors: Sequence[tuple[str, Vector]],
        filters: SearchFilters,
        limit: int,
    ) -> tuple[list[SearchHit], list[list[SearchHit]]]:
        """(keyword hits, the hits of each (view id, vector)) of one ``_msearch``, each of
        current versions only."""
        check_limit(limit)
        size = limit * OVERFETCH + MARGIN
        bodies: list[tuple[str, dict[str, Any]]] = []
        if terms:
            bodies.append(("keyword", self._keyword_body(terms, filters, size)))
        for n, (view_id, vector) in enumerate(vectors):
            bodies.append((f"dense{n}", self._knn_body(view_id, vector, filters, size)))
        answers = self._msearch([body for _, body in bodies])
        results = {name: hits for (name, _), hits in zip(bodies, answers, strict=True)}
        live = self._current(
            [h for hits in results.values() for h in hits]
        )
        keyword = [h for h in results.get("keyword", []) if h.chunk_id in live][:limit]
        # rare: old versions crowded the over-fetch out; ask each short leg for more
        if terms and len(keyword) < limit <= len(results.get("keyword", [])):
            keyword = self._live_hits(
                lambda n: self._keyword_body(terms, filters, n), limit, size * 4
            )
        dense: list[list[SearchHit]] = []
        for n, (view_id, vector) in enumerate(vectors):
            got = results[f"dense{n}"]
            hits = [h for h in got if h.chunk_id in live][:limit]
            if len(hits) < limit <= len(got):
                hits = self._live_hits(
                    functools.partial(self._knn_body, view_id, vector, filters),
                    limit, size * 4,
                )
            dense.append(hits)
        return keyword, dense

    def keyword_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[SearchHit]:
        return self.both_legs(terms, (), filters, limit)[0]

    def vector_search(
        self, model_id: str, vector: Vector, filters: SearchFilters, limit: int
    ) -> list[SearchHit]:
        return self.both_legs((), [(model_id, vector)], filters, limit)[1][0]

    def filtered_chunks(self, filters: SearchFilters, limit: int) -> list[Chunk]:
        check_limit(limit)
        body = {
            "query": {"bool": {"filter": filter_clauses(filters)}},
            "sort": [{"chunk_id": "asc"}], "size": limit * OVERFETCH + MARGIN,
            "_source": _SOURCE, "track_total_hits": False,
        }
        (hits,) = self._msearch([body])
        live = self._current(hits)
        return [h.chunk for h in hits if h.chunk_id in live][:limit]

    def get_chunks(self, chunk_ids: Sequence[str], filters: SearchFilters) -> list[Chunk]:
        if not chunk_ids:
            return []
        body = {
            "query": {"bool": {"filter": [
                {"ids": {"values": list(chunk_ids)}}, *filter_clauses(filters),
            ]}},
            "size": len(chunk_ids), "_source": _SOURCE, "track_total_hits": False,
        }
        (hits,) = self._msearch([body])
        live = self._current(hits)
        return [h.chunk for h in hits if h.chunk_id in live]

    def read_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        if not chunk_ids:
            return []
        resp = translate("read chunks", self.client.mget, index=self.index,
                         ids=list(dict.fromkeys(chunk_ids)), source_excludes=_SOURCE["excludes"])
        return [chunk_from_source(d["_source"]) for d in resp["docs"] if d.get("found")]

    # -- plumbing ----------------------------------------------------------
    def _keyword_body(
        self, terms: Sequence[str], filters: SearchFilters, size: int
    ) -> dict[str, Any]:
        return {
            "query": {"bool": {
                "must": {"match": {"terms": {"query": " ".join(dict.fromkeys(terms))}}},
                "filter": filter_clauses(filters),
            }},
            "size": size, "_source": _SOURCE, "track_total_hits": False,
        }

    def _knn_body(
        self, view_id: str, vector: Vector, filters: SearchFilters, size: int
    ) -> dict[str, Any]:
        field = self.store.ensure_vector_field(view_id, len(vector))
        return {
            "knn": {
                "field": f"{field}.v",  # nested: a chunk scores by its best row
                "query_vector": [float(x) for x in vector],
                "k": size,
                "num_candidates": min(10000, max(100, size * NUM_CANDIDATES_FACTOR)),
                "filter": filter_clauses(filters),
            },
            "size": size, "_source": _SOURCE, "track_total_hits": False,
        }

    def _msearch(self, bodies: list[dict[str, Any]]) -> list[list[SearchHit]]:
        if not bodies:
            return []
        searches: list[dict[str, Any]] = []
        for body in bodies:
            searches += [{"index": self.index}, body]
        resp = translate("search chunks", self.client.msearch, searches=searches)
        results: list[list[SearchHit]] = []
        for body, answer in zip(bodies, resp["responses"], strict=True):
            if "error" in answer:
                status = int(answer.get("status", 500))
                cls = TransientStoreError if is_transient_status(status) else StoreError
                raise cls(f"search chunks: {json.dumps(answer['error'])[:300]}")
            results.append([
                SearchHit(chunk_from_source(h["_source"]), _knn_cosine(h.get("_score")))
                if "knn" in body else
                SearchHit(chunk_from_source(h["_source"]), float(h.get("_score") or 0.0))
                for h in answer["hits"]["hits"]
            ])
        return results

    def _current(self, hits: Sequence[SearchHit]) -> set[str]:
        """Ids of the hits that belong to their document's current, live version."""
        documents = sorted({h.chunk.document_id for h in hits})
        states = self.store.get_states(documents) if documents else {}
        return {
            h.chunk_id for h in hits
            if (s := states.get(h.chunk.document_id)) is not None
            and not s.deleted and s.version == h.chunk.version
        }

    def _live_hits(
        self, body: Callable[[int], dict[str, Any]], limit: int, size: int
    ) -> list[SearchHit]:
        (hits,) = self._msearch([body(size)])
        live = self._current(hits)
        return [h for h in hits if h.chunk_id in live][:limit]

    def without_vectors(self, model_id: str, chunk_ids: Sequence[str]) -> set[str]:
        if not chunk_ids:
            return set()
        ids = list(dict.fromkeys(chunk_ids))
        query = {"bool": {"filter": {"ids": {"values": ids}},
                          "must_not": _has_vectors(model_id)}}
        resp = translate("chunks without vectors", self.client.search, index=self.index,
                         query=query, size=len(ids), source=False, track_total_hits=False)
        return {h["_id"] for h in resp["hits"]["hits"]}

    # -- VectorStore -------------------------------------------------------
    def _missing_query(self, model_id: str) -> dict[str, Any]:
        return {"bool": {"must_not": _has_vectors(model_id)}}

    def chunks_missing_vectors(self, model_id: str, limit: int) -> list[tuple[str, str]]:
        check_limit(limit)
        found: list[tuple[str, str]] = []
        after: list[Any] | None = None
        while len(found) < limit:
            kwargs: dict[str, Any] = {
                "index": self.index, "query": self._missing_query(model_id),
                "sort": [{"indexed_at": "asc"}, {"chunk_id": "asc"}],
                "size": limit * OVERFETCH + MARGIN, "source": _SOURCE,
                "track_total_hits": False,
            }
            if after is not None:
                kwargs["search_after"] = after
            resp = translate("chunks missing vectors", self.client.search, **kwargs)
            raw = resp["hits"]["hits"]
            hits = [SearchHit(chunk_from_source(h["_source"]), 0.0) for h in raw]
            live = self._current(hits)
            found += [(h.chunk_id, text_to_embed(h.chunk)) for h in hits if h.chunk_id in live]
            if len(raw) < kwargs["size"]:
                break
            after = raw[-1]["sort"]
        return found[:limit]

    def put_vectors(
        self, model_id: str, vectors: Mapping[str, Sequence[float] | Sequence[Sequence[float]]]
    ) -> int:
        rows = {cid: vector_rows(vector) for cid, vector in vectors.items()}
        if not rows:
            return 0
        dims = {matrix.shape[1] for matrix in rows.values()}
        if len(dims) != 1:
            raise ValueError(f"vectors of {model_id!r} have different dimensions: {sorted(dims)}")
        field = self.store.ensure_vector_field(model_id, dims.pop())
        lines = []
        for cid, matrix in rows.items():
            action = json.dumps({"update": {"_index": self.index, "_id": cid}})
            doc = json.dumps({"doc": {field: [{"v": row} for row in matrix.tolist()]}})
            lines.append((cid, f"{action}\n{doc}\n".encode()))
        # wait_for: the backfill's next look at the backlog sees these vectors, so no chunk
        # is offered (and written) again while the index has not refreshed
        refused = bulk(
            self.client, lines, "put vectors",
            max_actions=self.store.bulk_max_actions, max_bytes=self.store.bulk_max_bytes,
            refresh="wait_for",
        )
        gone = [cid for cid, why in refused if "document_missing" in why]
        bad = [(cid, why) for cid, why in refused if "document_missing" not in why]
        if bad:
            raise StoreError(f"Elasticsearch refused vectors: {bad[:3]}")
        return len(lines) - len(gone)

    def vector_backlog(self, model_id: str) -> tuple[int, datetime | None]:
        """Chunks without a vector of the model (old versions awaiting their delete too)."""
        resp = translate(
            "vector backlog", self.client.search, index=self.index,
            query=self._missing_query(model_id), size=0, track_total_hits=True,
            aggs={"oldest": {"min": {"field": "indexed_at"}}},
        )
        count = int(resp["hits"]["total"]["value"])
        oldest = resp["aggregations"]["oldest"].get("value_as_string")
        return count, parse_dt(oldest) if count else None


def _has_vectors(view_id: str) -> dict[str, Any]:
    """Chunks holding vectors of the view (none match while its field is not mapped)."""
    field = view_field(view_id)
    return {"nested": {"path": field, "query": {"exists": {"field": f"{field}.v"}},
                       "ignore_unmapped": True}}


def _knn_cosine(score: float | None) -> float:
    """Elasticsearch's cosine ``_score`` is (1 + cosine) / 2; the service wants the cosine."""
    return 2.0 * float(score) - 1.0 if score is not None else 0.0
