"""What the index holds per document, read cheaply: states plus the chunks actually present.

The index is the truth, not a ledger: a state saying "v7, 5 chunks" is checked
against the chunks found in the chunk index. Counting costs one composite
aggregation on Elasticsearch (``document_id`` x ``version`` buckets, 10,000 per
request), or one scan over chunk references on other stores; never one query
per document. Memory grows with the number of documents (one small tuple
each), not with the number of chunks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from reindex.model import IndexedDocument
from store.base import Store
from store.elasticsearch import ElasticsearchStore
from store.es_requests import translate as es_call

_BUCKETS_PER_PAGE = 10_000


def chunk_counts(store: Store) -> Iterator[tuple[str, int, int]]:
    """(document_id, version, chunks present) for every pair present in the index."""
    if isinstance(store, ElasticsearchStore):
        yield from _es_chunk_counts(store)
        return
    counts: dict[tuple[str, int], int] = {}
    for ref in store.iter_chunks():
        key = (ref.document_id, ref.version)
        counts[key] = counts.get(key, 0) + 1
    for (document_id, version), count in counts.items():
        yield document_id, version, count


def _es_chunk_counts(store: ElasticsearchStore) -> Iterator[tuple[str, int, int]]:
    after: dict[str, Any] | None = None
    while True:
        composite: dict[str, Any] = {
            "size": _BUCKETS_PER_PAGE,
            "sources": [
                {"d": {"terms": {"field": "document_id"}}},
                {"v": {"terms": {"field": "version"}}},
            ],
        }
        if after is not None:
            composite["after"] = after
        resp = es_call(
            "count chunks per document",
            store.client.search,
            index=store.names.chunks,
            size=0,
            track_total_hits=False,
            aggs={"pairs": {"composite": composite}},
        )
        agg = resp["aggregations"]["pairs"]
        for bucket in agg["buckets"]:
            key = bucket["key"]
            yield str(key["d"]), int(key["v"]), int(bucket["doc_count"])
        after = agg.get("after_key")
        if after is None or len(agg["buckets"]) < _BUCKETS_PER_PAGE:
            return


def read_index(store: Store) -> dict[str, IndexedDocument]:
    """Every document the index has a state for, with the chunks present for it.

    Chunks of documents without a state (a crash before the first state write)
    are the sweep's business and are not reported here.
    """
    store.refresh()
    view: dict[str, IndexedDocument] = {}
    for state in store.iter_states():
        view[state.document_id] = IndexedDocument(
            version=state.version,
            deleted=state.deleted,
            expected_chunks=0 if state.deleted else len(state.chunk_ids),
            owner=state.owner,
        )
    current: dict[str, int] = {}
    older: dict[str, int] = {}
    for document_id, version, count in chunk_counts(store):
        doc = view.get(document_id)
        if doc is None:
            continue
        if version == doc.version and not doc.deleted:
            current[document_id] = current.get(document_id, 0) + count
        elif version <= doc.version:
            older[document_id] = older.get(document_id, 0) + count
        # Above the state's version: a worker between its chunk write and its
        # state write, or a crash there; the sweep judges it after its grace.
    for document_id in current.keys() | older.keys():
        doc = view[document_id]
        view[document_id] = IndexedDocument(
            doc.version,
            doc.deleted,
            doc.expected_chunks,
            current.get(document_id, 0),
            older.get(document_id, 0),
            doc.owner,
        )
    return view
