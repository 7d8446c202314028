"""A store file made before the search side gets its search rows once, on ensure_ready."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from support.chunks import make_chunk

from store.model import DocumentState
from store.search_index import SearchFilters
from store.sqlite import SQLiteStore
from store.sqlite_schema import SCHEMA_VERSION
from store.sqlite_search import SQLiteSearchIndex

T0 = datetime(2027, 1, 1, tzinfo=UTC)


def test_a_version_1_file_is_searchable_after_ensure_ready(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    store = SQLiteStore(path)
    store.ensure_ready()
    store.write_chunks([make_chunk("refunds", 1, "window", text="refund window sixty days")])
    store.put_state(DocumentState("refunds", 1, T0, T0, ("refunds@v1#window",)))
    # what a version-1 program left: no search rows, schema_version 1
    store._write("downgrade", [
        ("DELETE FROM chunk_filters", ()), ("DELETE FROM chunk_terms", ()),
        ("UPDATE store_meta SET value = '1' WHERE key = 'schema_version'", ()),
    ])
    filters = SearchFilters(date(2027, 2, 1))
    assert SQLiteSearchIndex(store).keyword_search(["refund"], filters, 10) == []
    store.close()

    reopened = SQLiteStore(path)
    reopened.ensure_ready()
    hits = SQLiteSearchIndex(reopened).keyword_search(["refund"], filters, 10)
    assert [h.chunk_id for h in hits] == ["refunds@v1#window"]
    version = reopened._read("v", "SELECT value FROM store_meta WHERE key = 'schema_version'")
    assert version == [(str(SCHEMA_VERSION),)]
    reopened.close()
