"""The SQLite keyword leg with and without its in-memory postings, for the tests that
compare the two (``store.sqlite_search``: the copy is read on a thread of its own)."""

from __future__ import annotations

from datetime import date

from store.search_index import SearchFilters
from store.sqlite import SQLiteStore
from store.sqlite_search import SQLiteSearchIndex

DAY = date(2027, 4, 1)
DEADLINE_S = 30.0


def only_fts5(store: SQLiteStore) -> SQLiteSearchIndex:
    """An index that never uses the copy: FTS5 ranks every search (the reference)."""
    index = SQLiteSearchIndex(store)
    index._postings = lambda: None  # type: ignore[method-assign]
    return index


def settle(index: SQLiteSearchIndex) -> None:
    """Wait for the copy being read on its thread, if any (a deadline, loudly)."""
    reader = index._reader
    if reader is not None:
        reader.join(timeout=DEADLINE_S)
        assert not reader.is_alive(), f"the postings reader still reads after {DEADLINE_S} s"


def hits(index: SQLiteSearchIndex, terms: list[str], limit: int = 10,
         labels: frozenset[str] | None = frozenset()) -> list[tuple[str, float]]:
    """(chunk id, score) of a keyword search on ``DAY``, no scope."""
    found = index.keyword_search(terms, SearchFilters(DAY, (), labels), limit)
    return [(h.chunk.chunk_id, h.score) for h in found]
