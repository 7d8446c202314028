"""The delete step and the sweep on the embedded SQLite store (same code as on ES)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from support.chunks import make_chunk

from deleter.step import delete_older_versions
from deleter.sweep import sweep
from store.model import DocumentState
from store.sqlite import SQLiteStore

T0 = datetime(2024, 6, 1, tzinfo=UTC)


def ids(store: SQLiteStore) -> list[str]:
    return [r.chunk_id for r in store.iter_chunks()]


def test_the_delete_step_removes_only_older_versions(sqlite_store: SQLiteStore) -> None:
    sqlite_store.write_chunks([make_chunk("d", v, s) for v in (1, 2, 3) for s in ("a", "b")])
    result = delete_older_versions(sqlite_store, "d", 2, known_ids=["d@v1#a", "d@v3#a"])
    assert ids(sqlite_store) == ["d@v2#a", "d@v2#b", "d@v3#a", "d@v3#b"]
    assert (result.requested, result.deleted) == (2, 2)
    assert delete_older_versions(sqlite_store, "d", 2).deleted == 0  # twice is harmless


def test_the_sweep_removes_planted_leftovers_after_the_grace_period(
    sqlite_store: SQLiteStore,
) -> None:
    sqlite_store.write_chunks([make_chunk("kept", 2, "a"), make_chunk("kept", 1, "a"),
                               make_chunk("gone", 4, "a"), make_chunk("kept", 3, "a"),
                               make_chunk("nobody", 1, "a")])
    sqlite_store.put_state(DocumentState("kept", 2, T0, T0, chunk_ids=("kept@v2#a",)))
    sqlite_store.put_state(DocumentState("gone", 5, T0, T0, deleted=True))
    young = sweep(sqlite_store, grace=timedelta(minutes=10))
    assert dict(young.leftovers) == {"older": 1, "deleted-document": 1}
    assert young.kept_in_grace == 2
    later = sweep(sqlite_store, grace=timedelta(minutes=10),
                  now=datetime.now(UTC) + timedelta(hours=1))
    assert dict(later.leftovers) == {"above-current": 1, "unknown-document": 1}
    assert ids(sqlite_store) == ["kept@v2#a"]
