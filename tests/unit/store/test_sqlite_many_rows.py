"""The embedded store writes and deletes many chunks a statement, in slices: the index it
leaves is the one that writing and deleting the chunks one at a time leaves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.chunks import make_chunk

from chunker.model import Chunk
from store.sqlite import SQLiteStore


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    one, many = SQLiteStore(tmp_path / "one.sqlite3"), SQLiteStore(tmp_path / "many.sqlite3")
    for store in (one, many):
        store.ensure_ready()
    many._per_statement = 3  # slices of three rows: every statement kind is cut
    yield one, many
    one.close()
    many.close()


def contents(store: SQLiteStore) -> dict[str, list[Any]]:
    """Every row of the chunks and their search rows, by chunk id and rowid, times left out."""
    return {
        "chunks": store._read("c", "SELECT rowid, chunk_id, document_id, version, access_labels, "
                                   "embed_text, body FROM chunks ORDER BY rowid"),
        "filters": store._read("f", "SELECT * FROM chunk_filters ORDER BY rowid"),
        "terms": store._read("t", "SELECT rowid, terms FROM chunk_terms ORDER BY rowid"),
        "text": store._read("x", "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH 'section' "
                                 "ORDER BY rowid"),
    }


def sample(n: int, version: int = 1) -> list[Chunk]:
    return [
        make_chunk(f"doc{i % 4}", version, f"s{i}", text=f"section {i} of the refund rules",
                   metadata={"access_labels": ["agents"] if i % 2 else [], "language": "en",
                             "scope": [f"city-{i % 3}"]})
        for i in range(n)
    ]


def test_many_chunks_a_statement_write_what_one_at_a_time_writes(
    stores: tuple[SQLiteStore, SQLiteStore],
) -> None:
    one, many = stores
    chunks = sample(10)
    for chunk in chunks:
        one.write_chunks([chunk])
    assert many.write_chunks(chunks) == 10
    assert contents(many) == contents(one)
    assert len(contents(many)["terms"]) == 10


def test_an_id_given_twice_keeps_its_first_place_and_its_last_chunk(
    stores: tuple[SQLiteStore, SQLiteStore],
) -> None:
    one, many = stores
    first, second = sample(2)
    again = make_chunk(first.document_id, 1, first.section, text="section rewritten entirely")
    for chunk in (first, second, again):
        one.write_chunks([chunk])
    assert many.write_chunks([first, second, again]) == 3  # as many as given, as before
    assert contents(many) == contents(one)
    (terms,) = many._read("t", "SELECT terms FROM chunk_terms WHERE rowid = 1")
    assert "rewritten" in terms[0]


def test_writing_a_version_again_changes_nothing_but_its_times(
    stores: tuple[SQLiteStore, SQLiteStore],
) -> None:
    _, many = stores
    chunks = sample(7)
    many.write_chunks(chunks)
    before = contents(many)
    many.write_chunks(chunks)
    assert contents(many) == before


def test_deleting_in_slices_counts_what_was_there_and_takes_the_search_rows(
    stores: tuple[SQLiteStore, SQLiteStore],
) -> None:
    one, many = stores
    chunks = sample(8)
    one.write_chunks(chunks)
    many.write_chunks(chunks)
    gone = [c.chunk_id for c in chunks[:6]] + ["doc9@v1#absent", chunks[0].chunk_id]
    for chunk_id in gone:
        one.delete_chunks([chunk_id])
    assert many.delete_chunks(gone) == 6
    assert contents(many) == contents(one)
    assert len(contents(many)["terms"]) == 2
    assert many.delete_chunks(gone) == 0
