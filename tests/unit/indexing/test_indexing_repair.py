"""Same-version repair: the chunks present made to match the version the index holds."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from support.chunks import fake_chunker, make_chunk
from support.racing import RacingStore

from events.model import Action, ChangeEvent
from indexing.core import Indexer
from indexing.model import RepairResult
from indexing.repair import remove_leftovers, rewrite
from store.memory import InMemoryStore


def upsert(doc: str, version: int, content: str) -> ChangeEvent:
    return ChangeEvent(event_id=f"{doc}-{version}", document_id=doc, action=Action.UPSERT,
                       version=version, changed_at=datetime(2024, 1, version, tzinfo=UTC),
                       content_type="text/markdown", content=content)


def test_lost_chunks_come_back_and_strays_of_the_version_go() -> None:
    store = InMemoryStore()
    indexer = Indexer(store, chunk=fake_chunker)
    indexer.apply_one(upsert("d", 1, "alpha"))
    indexer.apply_one(upsert("d", 2, "alpha\n\nbeta"))
    store.delete_chunks(["d@v2#beta"])  # lost from the index
    store.write_chunks([make_chunk("d", 2, "stray"), make_chunk("d", 1, "old")])
    state = store.get_state("d")
    assert state is not None

    result = rewrite(indexer, upsert("d", 2, "alpha\n\nbeta"), state)

    assert result == RepairResult(written=2, deleted=2)
    assert sorted(store.chunks) == ["d@v2#alpha", "d@v2#beta"]
    after = store.get_state("d")
    assert after is not None and after.version == 2


def test_a_repair_that_loses_to_a_newer_version_takes_back_what_it_wrote() -> None:
    store = RacingStore()
    Indexer(store, chunk=fake_chunker).apply_one(upsert("d", 2, "alpha"))
    state = store.get_state("d")
    assert state is not None
    store.newer = upsert("d", 3, "newer")  # a worker indexes v3 while the repair writes v2

    rewrite(Indexer(store, chunk=fake_chunker), upsert("d", 2, "alpha\n\nbeta"), state)

    assert sorted(store.chunks) == ["d@v3#newer"]
    after = store.get_state("d")
    assert after is not None and after.version == 3


def test_a_repair_at_another_version_is_refused_naming_both() -> None:
    store = InMemoryStore()
    indexer = Indexer(store, chunk=fake_chunker)
    indexer.apply_one(upsert("d", 2, "alpha"))
    state = store.get_state("d")
    assert state is not None
    with pytest.raises(ValueError, match=r"event version 3 != state version 2 of 'd'"):
        rewrite(indexer, upsert("d", 3, "alpha"), state)


def test_leftovers_of_a_tombstone_go_including_its_own_version() -> None:
    store = InMemoryStore()
    indexer = Indexer(store, chunk=fake_chunker)
    indexer.apply_one(upsert("d", 1, "alpha"))
    indexer.apply_one(ChangeEvent(event_id="d-2", document_id="d", action=Action.DELETE,
                                  version=2, changed_at=datetime(2024, 1, 2, tzinfo=UTC)))
    store.write_chunks([make_chunk("d", 1, "late"), make_chunk("d", 2, "late")])
    state = store.get_state("d")
    assert state is not None and state.deleted

    assert remove_leftovers(store, state) == RepairResult(written=0, deleted=2)
    assert store.chunks == {}
