from __future__ import annotations

from datetime import UTC, datetime, timedelta

from support.chunks import make_chunk

from deleter.sweep import sweep
from store.memory import InMemoryStore
from store.model import DocumentState

NOW = datetime(2024, 6, 1, tzinfo=UTC)


def clean_store() -> InMemoryStore:
    store = InMemoryStore()
    store.write_chunks([make_chunk("kept", 2, "a"), make_chunk("kept", 2, "b")])
    store.put_state(DocumentState("kept", 2, NOW, NOW, chunk_ids=("kept@v2#a", "kept@v2#b")))
    store.put_state(DocumentState("gone", 5, NOW, NOW, deleted=True))
    return store


def age(store: InMemoryStore, chunk_id: str, by: timedelta) -> None:
    chunk, at = store.chunks[chunk_id]
    store.chunks[chunk_id] = (chunk, at - by)


def test_a_clean_index_is_left_alone() -> None:
    store = clean_store()
    report = sweep(store, grace=timedelta(0))
    assert report.total_leftovers == 0 and report.deleted == 0
    assert sorted(store.chunks) == ["kept@v2#a", "kept@v2#b"]


def test_planted_leftovers_are_removed_and_young_ones_wait_for_the_grace_period() -> None:
    store = clean_store()
    store.write_chunks([
        make_chunk("kept", 1, "a"),      # older
        make_chunk("gone", 4, "a"),      # deleted document
        make_chunk("kept", 3, "a"),      # above current: young, then old
        make_chunk("nobody", 1, "a"),    # unknown document
    ])
    age(store, "nobody@v1#a", timedelta(hours=1))
    report = sweep(store, grace=timedelta(minutes=10))
    assert dict(report.leftovers) == {"older": 1, "deleted-document": 1, "unknown-document": 1}
    assert report.kept_in_grace == 1
    assert sorted(store.chunks) == ["kept@v2#a", "kept@v2#b", "kept@v3#a"]
    age(store, "kept@v3#a", timedelta(hours=1))
    dry = sweep(store, grace=timedelta(minutes=10), dry_run=True)
    assert dict(dry.leftovers) == {"above-current": 1} and dry.deleted == 0
    assert sweep(store, grace=timedelta(minutes=10)).deleted == 1
    assert sorted(store.chunks) == ["kept@v2#a", "kept@v2#b"]
