"""What the embedded store adds to the contract: one durable file, and keyword search."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.chunks import make_chunk

from chunker.model import Chunk
from store.errors import StoreError, StoreSetupError, TransientStoreError
from store.model import DocumentState
from store.search import SearchQueryError
from store.sqlite import SQLiteStore
from store.sqlite_rows import Statement, filter_rows

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def index(store: SQLiteStore, doc: str, version: int, sections: dict[str, tuple[str, list[str]]],
          ) -> None:
    """Write a version's chunks (text, access labels) and make it current.

    The search reads ``embed_text``: heading path ``Title > <name>``, then the text.
    """
    chunks = [
        make_chunk(doc, version, name, text=text, metadata={"access_labels": labels})
        for name, (text, labels) in sections.items()
    ]
    store.write_chunks(chunks)
    store.put_state(DocumentState(doc, version, T0, T0, tuple(c.chunk_id for c in chunks)))


def found(store: SQLiteStore, text: str, labels: list[str] | None = None) -> list[str]:
    return [h.chunk_id for h in store.search(text, access_labels=labels or [], limit=100)]


def test_search_ranks_by_bm25_over_embed_text(sqlite_store: SQLiteStore) -> None:
    index(sqlite_store, "refund", 1, {
        "cards": ("Gift cards are never refunded", []),
        "window": ("Refunds within thirty days; refunds are paid to the card", []),
        "shipping": ("Shipping takes five days", []),
    })
    hits = sqlite_store.search("refunds", access_labels=[], limit=10)
    assert [h.chunk_id for h in hits] == ["refund@v1#window"]  # 'refunded' is another word
    assert hits[0].score > 0
    assert hits[0].chunk.text == "Refunds within thirty days; refunds are paid to the card"
    assert hits[0].chunk.embed_text == "Title > window\n" + hits[0].chunk.text
    assert found(sqlite_store, "window") == ["refund@v1#window"]  # the heading path is searched too
    # Any word matches; the chunk with both words ranks first.
    assert found(sqlite_store, "card days") == ["refund@v1#window", "refund@v1#shipping"]


def test_permission_labels_are_enforced_inside_the_query(sqlite_store: SQLiteStore) -> None:
    # Ten restricted chunks rank above the one public chunk: a filter applied after a
    # LIMIT 1 would return nothing; inside the query it returns the public chunk.
    index(sqlite_store, "policy", 1, {
        **{f"r{i}": ("refund refund refund", ["finance"]) for i in range(10)},
        "public": ("refund", []),
        "both": ("refund refund", ["finance", "agents"]),
    })
    hits = sqlite_store.search("refund", access_labels=["agents"], limit=1)
    assert [h.chunk_id for h in hits] == ["policy@v1#public"]
    assert "policy@v1#both" not in found(sqlite_store, "refund", ["finance"])
    assert "policy@v1#both" in found(sqlite_store, "refund", ["finance", "agents"])
    assert len(sqlite_store.search("refund", access_labels=["finance"], limit=100)) == 11


def test_search_sees_only_the_current_version_of_live_documents(sqlite_store: SQLiteStore) -> None:
    index(sqlite_store, "d", 1, {"a": ("alpha old", [])})
    index(sqlite_store, "d", 2, {"a": ("alpha new", [])})  # v1 chunks still there, not yet deleted
    sqlite_store.write_chunks([make_chunk("d", 3, "a", text="alpha next")])  # no state yet
    assert found(sqlite_store, "alpha") == ["d@v2#a"]
    sqlite_store.put_state(DocumentState("d", 4, T0, T0, deleted=True))
    assert found(sqlite_store, "alpha") == []


@pytest.mark.parametrize("text", ['"', "refund OR", "NEAR(a b)", "a* -b ^c", "col:x", "(((", ""])
def test_any_text_is_a_literal_query_never_fts5_syntax(
    sqlite_store: SQLiteStore, text: str,
) -> None:
    index(sqlite_store, "d", 1, {"a": ("refund col x", [])})
    assert isinstance(sqlite_store.search(text, access_labels=[]), list)


def test_unicode_words_match_without_diacritics(sqlite_store: SQLiteStore) -> None:
    index(sqlite_store, "tr", 1, {"a": ("Ücretsiz iade süresi", [])})
    index(sqlite_store, "fr", 1, {"a": ("Politique de remboursement élargie", [])})
    assert found(sqlite_store, "elargie") == ["fr@v1#a"]
    assert found(sqlite_store, "ucretsiz") == ["tr@v1#a"]


def test_bad_limit_is_a_clear_error(sqlite_store: SQLiteStore) -> None:
    with pytest.raises(SearchQueryError, match="limit=0"):
        sqlite_store.search("x", access_labels=[], limit=0)


def test_everything_survives_closing_and_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "index.sqlite3"
    first = SQLiteStore(path)
    first.ensure_ready()
    index(first, "d", 2, {"a": ("alpha", ["agents"])})
    first.close()
    again = SQLiteStore(path)
    again.ensure_ready()
    assert [r.chunk_id for r in again.iter_chunks()] == ["d@v2#a"]
    state = again.get_state("d")
    assert state is not None and state.chunk_ids == ("d@v2#a",)
    assert found(again, "alpha", ["agents"]) == ["d@v2#a"]
    assert again._read("mode", "PRAGMA journal_mode") == [("wal",)]
    again.close()


def test_a_file_that_is_not_a_database_is_a_setup_error(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreSetupError, match=r"index\.sqlite3.*not a database"):
        SQLiteStore(path).ensure_ready()


def test_paging_lists_more_than_one_page(sqlite_store: SQLiteStore) -> None:
    sqlite_store.write_chunks([make_chunk(f"d{i:04d}", 1) for i in range(1100)])
    for i in range(1100):
        sqlite_store.put_state(DocumentState(f"d{i:04d}", 1, T0, T0))
    assert len(list(sqlite_store.iter_chunks())) == 1100
    assert len(list(sqlite_store.iter_states())) == 1100


def test_a_locked_database_is_a_transient_error_the_worker_retries(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    store = SQLiteStore(path, busy_timeout_s=0.2)
    store.ensure_ready()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(TransientStoreError, match="locked"):
            store.write_chunks([make_chunk("d", 1)])
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert store.write_chunks([make_chunk("d", 1)]) == 1
    store.close()


class TermsFailed(Exception):
    pass


def test_a_chunk_write_that_fails_halfway_leaves_nothing_and_the_store_usable(
    sqlite_store: SQLiteStore, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A chunk write runs its rows on a second thread while this one computes the terms
    # (``_write_overlapped``). Bad inputs: the terms' computation raising, and an SQL
    # statement SQLite refuses on the other thread. Each: that error, nothing written,
    # no transaction left open, and the next write and search work.
    def failing_terms(*_args: object) -> list[Statement]:
        raise TermsFailed("terms could not be computed")

    with monkeypatch.context() as patch:
        patch.setattr("store.sqlite.term_rows", failing_terms)
        with pytest.raises(TermsFailed):
            index(sqlite_store, "refund", 1, {"cards": ("Gift cards are never refunded", [])})
    def refused_statement(chunks: Sequence[Chunk], per_statement: int) -> list[Statement]:
        return [*filter_rows(chunks, per_statement), ("INSERT INTO no_such_table VALUES (?)", [1])]

    with monkeypatch.context() as patch:
        patch.setattr("store.sqlite.filter_rows", refused_statement)
        with pytest.raises(StoreError, match="no_such_table"):
            index(sqlite_store, "refund", 1, {"cards": ("Gift cards are never refunded", [])})
    assert list(sqlite_store.iter_chunks()) == []
    assert found(sqlite_store, "gift") == []
    index(sqlite_store, "refund", 1, {"cards": ("Gift cards are never refunded", [])})
    assert [c.document_id for c in sqlite_store.iter_chunks()] == ["refund"]
    assert len(found(sqlite_store, "gift")) == 1
