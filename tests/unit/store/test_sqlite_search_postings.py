"""The keyword leg's in-memory postings answer exactly what FTS5 answers, and never late.

``store.search_postings`` re-does FTS5's ``bm25()`` in numpy; the leg may use it
only if a user cannot tell: the same rows, the same scores to the bit, the same
order (ties by row id), and a write seen by the next search.
"""

from __future__ import annotations

import random

from support.chunks import make_chunk
from support.keyword_copy import hits, only_fts5, settle
from support.stores import add_current

from store.search_postings import Postings
from store.sqlite import SQLiteStore
from store.sqlite_search import (
    ALL_TERMS,
    RANKED_MATCHES,
    VOCABULARY,
    VOCABULARY_TABLE,
    SQLiteSearchIndex,
    _match,
)

WORDS = [f"w{i}" for i in range(40)] + ["refund", "parcel", "late", "fee"]


def random_library(store: SQLiteStore, count: int, seed: int) -> None:
    """Chunks of skewed word frequencies and lengths, many exact duplicates (ties)."""
    rng = random.Random(seed)
    texts = [
        " ".join(rng.choices(WORDS, weights=[1 + i for i in range(len(WORDS))],
                             k=rng.randint(1, 60)))
        for _ in range(count // 2)
    ]
    texts += rng.choices(texts, k=count - len(texts))  # duplicates: equal scores
    add_current(store, [make_chunk(f"doc-{i:04d}", 1, "s", text=text, heading_path=["P"],
                           metadata={"language": None})
                for i, text in enumerate(texts)])


def fts5(store: SQLiteStore, terms: list[str], limit: int) -> list[tuple[int, float]]:
    return [tuple(row) for row in store._read(
        "test", RANKED_MATCHES, {"match": _match(terms), "limit": limit})]


def copy_of(store: SQLiteStore) -> Postings | None:
    with store._lock:
        store._conn.execute(VOCABULARY_TABLE)
        rows = store._conn.execute(ALL_TERMS).fetchall()
        vocabulary = store._conn.execute(VOCABULARY).fetchall()
    return Postings.build(rows, vocabulary)



def test_the_same_rows_scores_and_order_as_fts5(sqlite_store: SQLiteStore) -> None:
    random_library(sqlite_store, 400, seed=3)
    postings = copy_of(sqlite_store)
    assert postings is not None
    rng = random.Random(5)
    for _ in range(200):
        terms = list(dict.fromkeys(rng.sample([*WORDS, "absent", "nowhere9"], rng.randint(1, 8))))
        limit = rng.choice([1, 5, 64, 1000])
        # Bit-for-bit equal floats: == on the scores, not approx.
        assert postings.rank(terms, limit) == fts5(sqlite_store, terms, limit), terms


def test_an_unknown_term_fts5_might_split_goes_to_fts5(sqlite_store: SQLiteStore) -> None:
    random_library(sqlite_store, 50, seed=1)
    postings = copy_of(sqlite_store)
    assert postings is not None
    assert postings.rank(["refund", "Refund"], 5) is None
    assert postings.rank(["refund", "a_b"], 5) is None
    assert postings.rank(["nowhere9"], 5) == []


def test_no_copy_of_terms_fts5_tokenises_otherwise(sqlite_store: SQLiteStore) -> None:
    """``\\w`` keeps ``order_id`` whole; FTS5's unicode61 splits it in two tokens."""
    add_current(sqlite_store, [
        make_chunk("doc-a", 1, "s", text="order_id refund", metadata={"language": None}),
        make_chunk("doc-b", 1, "s", text="order refund id", metadata={"language": None}),
    ])
    assert copy_of(sqlite_store) is None
    index, reference = SQLiteSearchIndex(sqlite_store), only_fts5(sqlite_store)
    for _ in range(3):  # the second search would read the copy: there is none to read
        assert hits(index, ["order_id"]) == hits(reference, ["order_id"])
        assert hits(index, ["refund"]) == hits(reference, ["refund"]) != []


def test_a_write_is_seen_by_the_next_search(sqlite_store: SQLiteStore) -> None:
    random_library(sqlite_store, 100, seed=2)
    index, reference = SQLiteSearchIndex(sqlite_store), only_fts5(sqlite_store)
    for _ in range(2):  # the first asks FTS5, the second starts reading the copy
        assert hits(index, ["refund", "fee"]) == hits(reference, ["refund", "fee"])
    settle(index)
    assert index._copy is not None and index._copy[1] is not None

    add_current(sqlite_store, [make_chunk("doc-new", 1, "s", text="zebra " * 5 + "refund",
                                          metadata={"language": None})])
    for _ in range(3):  # FTS5, then a new copy (read on its thread), then that copy
        assert hits(index, ["zebra"]) == hits(reference, ["zebra"])
        settle(index)
        assert [cid for cid, _ in hits(index, ["zebra"])] == ["doc-new@v1#s"]
        assert hits(index, ["refund"], 50) == hits(reference, ["refund"], 50)


def test_a_write_from_another_connection_is_seen(sqlite_store: SQLiteStore) -> None:
    random_library(sqlite_store, 60, seed=4)
    index = SQLiteSearchIndex(sqlite_store)
    hits(index, ["refund"])
    hits(index, ["refund"])  # the copy is read now
    settle(index)
    assert index._copy is not None and index._copy[1] is not None
    other = SQLiteStore(sqlite_store.path)
    try:
        add_current(other, [make_chunk("doc-other", 1, "s", text="quokka",
                                       metadata={"language": None})])
    finally:
        other.close()
    assert [cid for cid, _ in hits(index, ["quokka"])] == ["doc-other@v1#s"]
    assert [cid for cid, _ in hits(index, ["quokka"])] == ["doc-other@v1#s"]


def test_the_filters_still_apply_after_the_copy(sqlite_store: SQLiteStore) -> None:
    add_current(sqlite_store, [
        make_chunk(f"doc-{i}", 1, "s", text="refund " * (i + 1),
                   metadata={"language": None, "access_labels": ["secret"] if i % 2 else []})
        for i in range(20)
    ])
    index, reference = SQLiteSearchIndex(sqlite_store), only_fts5(sqlite_store)
    for _ in range(2):
        for labels in (frozenset(), frozenset({"secret"}), None):
            assert hits(index, ["refund"], 5, labels) == hits(reference, ["refund"], 5, labels)
    seen = [cid for cid, _ in hits(index, ["refund"], 20, frozenset())]
    assert len(seen) == 10 and all(int(cid.split("@")[0][4:]) % 2 == 0 for cid in seen)
