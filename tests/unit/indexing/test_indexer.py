"""The seven steps on the in-memory store, with a stand-in chunker, one event at a time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from support.chunks import fake_chunker
from support.racing import RacingStore
from support.refusing_store import REFUSED, RefusingStore

from events.model import Action, ChangeEvent, EventMetadata
from indexing.core import Indexer
from indexing.errors import PoisonEvent
from indexing.model import Outcome
from store.memory import InMemoryStore


def upsert(doc: str, version: int, content: str, **meta: object) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc, action=Action.UPSERT, version=version,
        changed_at=datetime(2024, 1, version, tzinfo=UTC), content_type="text/markdown",
        content=content, metadata=EventMetadata(**meta),
    )


def delete(doc: str, version: int) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc, action=Action.DELETE, version=version,
        changed_at=datetime(2024, 1, version, tzinfo=UTC),
    )


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def proc(store: InMemoryStore) -> Indexer:
    return Indexer(store, chunk=fake_chunker)


def chunk_ids(store: InMemoryStore) -> list[str]:
    return sorted(store.chunks)


def test_a_new_version_replaces_the_old_chunks(store: InMemoryStore, proc: Indexer) -> None:
    assert proc.apply_one(upsert("refund", 1, "alpha one\n\nbeta two")) is Outcome.INDEXED
    assert proc.apply_one(upsert("refund", 2, "alpha changed\n\ngamma new")) is Outcome.INDEXED
    assert chunk_ids(store) == ["refund@v2#alpha", "refund@v2#gamma"]
    state = store.get_state("refund")
    assert state is not None and state.version == 2
    assert state.chunk_ids == ("refund@v2#alpha", "refund@v2#gamma")
    assert state.superseded_chunk_ids == ("refund@v1#alpha", "refund@v1#beta")


def test_older_and_equal_versions_are_skipped(store: InMemoryStore, proc: Indexer) -> None:
    proc.apply_one(upsert("d", 3, "alpha three"))
    assert proc.apply_one(upsert("d", 2, "alpha two")) is Outcome.SKIPPED_STALE
    assert proc.apply_one(upsert("d", 3, "alpha three")) is Outcome.SKIPPED_DUPLICATE
    assert chunk_ids(store) == ["d@v3#alpha"]


def test_a_delete_leaves_a_tombstone_that_a_late_upsert_cannot_pass(
    store: InMemoryStore, proc: Indexer
) -> None:
    proc.apply_one(upsert("d", 1, "alpha"))
    assert proc.apply_one(delete("d", 2)) is Outcome.DELETED
    assert chunk_ids(store) == []
    assert proc.apply_one(upsert("d", 1, "alpha")) is Outcome.SKIPPED_STALE
    assert chunk_ids(store) == []
    assert proc.apply_one(upsert("d", 3, "back again")) is Outcome.INDEXED
    assert chunk_ids(store) == ["d@v3#back"]


def test_redelivery_finishes_an_interrupted_delete_step(store: InMemoryStore) -> None:
    def crash(step: str) -> None:
        if step == "after-state-write":
            raise KeyboardInterrupt  # stands for a crash between state write and delete step

    Indexer(store, chunk=fake_chunker).apply_one(upsert("d", 1, "alpha"))
    with pytest.raises(KeyboardInterrupt):
        Indexer(store, chunk=fake_chunker, checkpoint=crash).apply_one(upsert("d", 2, "beta"))
    assert chunk_ids(store) == ["d@v1#alpha", "d@v2#beta"]
    outcome = Indexer(store, chunk=fake_chunker).apply_one(upsert("d", 2, "beta"))
    assert outcome is Outcome.SKIPPED_DUPLICATE
    assert chunk_ids(store) == ["d@v2#beta"]


def test_losing_a_race_to_a_newer_version_removes_what_was_written() -> None:
    racing = RacingStore(upsert("d", 5, "newer"))  # another worker indexes v5 while we write v4
    outcome = Indexer(racing, chunk=fake_chunker).apply_one(upsert("d", 4, "older"))
    assert outcome is Outcome.SKIPPED_STALE
    assert sorted(racing.chunks) == ["d@v5#newer"]


def test_unchanged_content_at_a_new_version_is_counted_and_rewritten(store: InMemoryStore) -> None:
    seen: list[int] = []
    proc = Indexer(store, chunk=fake_chunker, on_unchanged=lambda: seen.append(1))
    proc.apply_one(upsert("d", 1, "alpha"))
    proc.apply_one(upsert("d", 2, "alpha"))
    proc.apply_one(upsert("d", 3, "alpha", title="now with a title"))
    assert seen == [1]
    assert chunk_ids(store) == ["d@v3#alpha"]


def test_a_chunker_error_is_poison_and_changes_nothing(
    store: InMemoryStore, proc: Indexer
) -> None:
    proc.apply_one(upsert("d", 1, "alpha"))
    with pytest.raises(PoisonEvent) as caught:
        proc.apply_one(upsert("d", 2, "beta\n\nBOOM"))
    assert caught.value.reason == "chunker"
    assert chunk_ids(store) == ["d@v1#alpha"]
    state = store.get_state("d")
    assert state is not None and state.version == 1


def test_a_document_the_store_rejects_is_poison_and_changes_nothing() -> None:
    store = RefusingStore()
    proc = Indexer(store, chunk=fake_chunker)
    proc.apply_one(upsert("d", 1, "alpha"))
    with pytest.raises(PoisonEvent) as caught:
        proc.apply_one(upsert("d", 2, "alpha\n\nbeta", access_labels=[REFUSED]))
    assert caught.value.reason == "rejected"
    assert chunk_ids(store) == ["d@v1#alpha"]


def test_an_apply_reports_its_own_chunk_counts(store: InMemoryStore, proc: Indexer) -> None:
    first = proc.apply([upsert("d", 1, "alpha\n\nbeta"), upsert("e", 1, "gamma")])
    assert (first.chunks_written, first.chunks_deleted) == (3, 0)
    second = proc.apply([upsert("d", 2, "alpha again"), delete("e", 2)])
    assert second.results == (Outcome.INDEXED, Outcome.DELETED)
    assert (second.chunks_written, second.chunks_deleted) == (1, 3)


def test_the_checkpoints_come_once_per_apply_in_the_order_of_the_steps(
    store: InMemoryStore,
) -> None:
    """The crash tests count them: the n-th checkpoint is the n-th polled batch."""
    reached: list[str] = []
    proc = Indexer(store, chunk=fake_chunker, checkpoint=reached.append)
    proc.apply([upsert("d", 1, "alpha"), upsert("e", 1, "beta"), delete("f", 1)])
    assert reached == ["after-chunk-write", "after-state-write", "after-delete-step"]


def test_a_flush_size_below_one_is_refused_naming_it(store: InMemoryStore) -> None:
    with pytest.raises(ValueError, match="flush_chunks must be at least 1, got 0"):
        Indexer(store, flush_chunks=0)
