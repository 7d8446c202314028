"""The SQLite legs rank first and filter after, and still return exactly the best visible rows.

The keyword leg ranks every match inside FTS5, checks the filters on the best
block of row ids, and falls back to one filtered query when that block holds
too few rows the caller may see. Either way the answer must be the one the
definition gives: the global BM25 order, the chunks the filters admit, the
first ``limit`` of them.
"""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime

import numpy as np
import pytest
from support.chunks import make_chunk
from support.stores import add_current

from chunker.model import Chunk
from store.model import DocumentState
from store.search_index import SearchFilters
from store.sqlite import SQLiteStore
from store.sqlite_search import RANKED_MATCHES, SQLiteSearchIndex, _best

T0 = datetime(2027, 1, 1, tzinfo=UTC)
DAY = date(2027, 4, 1)


def library(store: SQLiteStore, secret: int, public: int) -> dict[str, Chunk]:
    """``secret`` chunks that mention refunds often, then ``public`` ones that mention them
    less: every secret chunk outranks every public one."""
    chunks = []
    for i in range(secret + public):
        is_secret = i < secret
        times = 12 - i % 5 if is_secret else 1 + i % 5
        chunks.append(make_chunk(
            f"doc-{i:03d}", 1, "s", text=" ".join(["refund"] * times + ["bicycle", f"w{i}"]),
            heading_path=["Policy", "s"],
            metadata={"language": "en", "access_labels": ["secret"] if is_secret else [],
                      "scope": ["lisbon"] if i % 3 == 0 else []},
        ))
    add_current(store, chunks)
    return {c.chunk_id: c for c in chunks}


def reference(store: SQLiteStore, chunks: dict[str, Chunk], terms: list[str],
              filters: SearchFilters, limit: int) -> list[str]:
    """The definition: FTS5's global BM25 order (ties by row id), filtered in Python."""
    match = " OR ".join(f'"{t}"' for t in terms)
    ranked = store._read("all", RANKED_MATCHES, {"match": match, "limit": 100_000})
    ids = dict(store._read("ids", "SELECT rowid, chunk_id FROM chunks"))
    admitted = [ids[r] for r, _ in ranked if filters.admits(chunks[ids[r]])]
    return admitted[:limit]


def test_a_caller_who_sees_the_top_gets_it_from_the_first_block(sqlite_store: SQLiteStore) -> None:
    chunks = library(sqlite_store, secret=150, public=30)
    index = SQLiteSearchIndex(sqlite_store)
    filters = SearchFilters(DAY, ("lisbon",), frozenset({"secret"}))
    hits = index.keyword_search(["refund", "bicycl"], filters, 10)
    assert [h.chunk_id for h in hits] == reference(
        sqlite_store, chunks, ["refund", "bicycl"], filters, 10)
    assert len(hits) == 10 and index.keyword_fallbacks == 0
    assert all(a.score >= b.score > 0 for a, b in itertools.pairwise(hits))


def test_a_caller_who_sees_only_the_tail_gets_the_best_visible_rows(
    sqlite_store: SQLiteStore,
) -> None:
    chunks = library(sqlite_store, secret=150, public=30)  # the first 64 ranked rows are all secret
    index = SQLiteSearchIndex(sqlite_store)
    for filters in (SearchFilters(DAY, (), frozenset()),
                    SearchFilters(DAY, ("valencia",), frozenset({"public"}))):
        hits = index.keyword_search(["refund"], filters, 10)
        expected = reference(sqlite_store, chunks, ["refund"], filters, 10)
        assert [h.chunk_id for h in hits] == expected and len(expected) == 10
        assert not any(h.chunk.metadata.access_labels for h in hits)
    assert index.keyword_fallbacks == 2


def test_fewer_matches_than_a_block_need_no_second_query(sqlite_store: SQLiteStore) -> None:
    chunks = library(sqlite_store, secret=20, public=3)
    index = SQLiteSearchIndex(sqlite_store)
    filters = SearchFilters(DAY, (), frozenset())
    hits = index.keyword_search(["refund"], filters, 10)
    assert [h.chunk_id for h in hits] == reference(sqlite_store, chunks, ["refund"], filters, 10)
    assert len(hits) == 3 and index.keyword_fallbacks == 0


def test_an_old_version_is_never_found_even_when_it_ranks_first(sqlite_store: SQLiteStore) -> None:
    old = make_chunk("doc", 1, "s", text="refund " * 20, metadata={"language": "en"})
    new = make_chunk("doc", 2, "s", text="refund once", metadata={"language": "en"})
    sqlite_store.write_chunks([old, new])
    sqlite_store.put_state(DocumentState("doc", 2, T0, T0, (new.chunk_id,)))
    hits = SQLiteSearchIndex(sqlite_store).keyword_search(["refund"], SearchFilters(DAY), 5)
    assert [h.chunk_id for h in hits] == [new.chunk_id]


@pytest.mark.parametrize("count", [1, 3, 7, 50, 64, 100, 1000])
def test_the_best_scores_are_the_prefix_of_a_stable_sort_ties_included(count: int) -> None:
    rng = np.random.default_rng(3)
    scores = rng.choice(np.array([0.1, 0.5, 0.5, 0.9, -0.2], dtype=np.float32), size=100)
    full = np.argsort(-scores, kind="stable")
    assert _best(scores, count).tolist() == full[:count].tolist()
