"""Two changes at one version, in the indexing core: an equal version that changes something.

An upsert at the indexed version with other content (two Sanity edits in one second, a
CMS at the top of the version range) replaces the text; a delete at the indexed version
deletes; the same content again is still a redelivery; a tombstone wins a tie. Each tie
is counted, its new chunks never reuse the old ids, and a tie the store refuses changes
nothing. On the in-memory store, SQLite (the embedded index) and Elasticsearch.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from support.refusing_store import REFUSED, RefusingStore
from support.stores import STORE_FACTORIES, StoreFactory

from events.model import MAX_SOURCE_VERSION, Action, ChangeEvent, EventMetadata
from indexing.core import Indexer
from indexing.errors import PoisonEvent
from indexing.model import Outcome
from store.base import Store

WHEN = datetime(2026, 11, 29, 18, 4, 5, tzinfo=UTC)
V = MAX_SOURCE_VERSION  # the largest a source may stamp: no higher one to come


def upsert(text: str, version: int = V, labels: list[str] | None = None) -> ChangeEvent:
    return ChangeEvent(event_id=f"e-{text[:12]}", document_id="deliveries",
                       action=Action.UPSERT, version=version, changed_at=WHEN,
                       content_type="text/markdown",
                       content=f"# Deliveries\n\n## Shipping\n\nOrders ship in {text}.\n",
                       metadata=EventMetadata(access_labels=labels))


def delete(version: int = V) -> ChangeEvent:
    return ChangeEvent(event_id=f"d-{version}", document_id="deliveries", action=Action.DELETE,
                       version=version, changed_at=WHEN)


@pytest.fixture(params=STORE_FACTORIES)
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    factory: StoreFactory = request.param
    with factory(request) as chosen:
        yield chosen


def chunks_of_v(store: Store) -> set[str]:
    store.refresh()
    return {r.chunk_id for r in store.find_chunks("deliveries", below_version=V + 1)}


def test_a_second_edit_at_the_same_version_replaces_the_first(store: Store) -> None:
    ties: list[str] = []
    indexer = Indexer(store, on_tie=lambda: ties.append("tie"))
    assert indexer.apply_one(upsert("two days")) is Outcome.INDEXED
    first = store.get_state("deliveries")
    assert first is not None
    assert indexer.apply_one(upsert("five days")) is Outcome.INDEXED
    second = store.get_state("deliveries")
    assert second is not None and second.version == V
    assert ties == ["tie"]
    assert not set(first.chunk_ids) & set(second.chunk_ids), "a tie's chunks get new ids"
    assert all("~" in cid and f"@v{V}#" in cid for cid in second.chunk_ids)
    assert chunks_of_v(store) == set(second.chunk_ids), "the first text's chunks are gone"
    assert second.content_hash != first.content_hash

    # the same text again is a redelivery: nothing changes, nothing counted
    assert indexer.apply_one(upsert("five days")) is Outcome.SKIPPED_DUPLICATE
    again = store.get_state("deliveries")
    assert again is not None and again.chunk_ids == second.chunk_ids
    assert ties == ["tie"]


def test_both_edits_in_one_batch_end_with_the_later(store: Store) -> None:
    indexer = Indexer(store)
    results = indexer.apply([upsert("two days"), upsert("five days")]).results
    assert results == (Outcome.SKIPPED_DUPLICATE, Outcome.INDEXED)
    state = store.get_state("deliveries")
    assert state is not None
    assert state.content_hash is not None
    one_by_one = Indexer(RefusingStore())
    one_by_one.apply_one(upsert("two days"))
    one_by_one.apply_one(upsert("five days"))
    other = one_by_one.store.get_state("deliveries")
    assert other is not None and other.content_hash == state.content_hash


def test_a_delete_at_the_same_version_deletes_and_a_tombstone_wins_a_tie(store: Store) -> None:
    indexer = Indexer(store)
    indexer.apply_one(upsert("two days"))
    assert indexer.apply_one(delete()) is Outcome.DELETED
    state = store.get_state("deliveries")
    assert state is not None and state.deleted
    assert chunks_of_v(store) == set()
    # a late redelivery of the upsert, or another text, at the delete's version: skipped
    assert indexer.apply_one(upsert("two days")) is Outcome.SKIPPED_DUPLICATE
    assert indexer.apply_one(upsert("nine days")) is Outcome.SKIPPED_DUPLICATE
    assert indexer.apply_one(delete()) is Outcome.SKIPPED_DUPLICATE
    # a re-creation at a newer version (the headroom above a source's versions) applies
    assert indexer.apply_one(upsert("nine days", V + 1)) is Outcome.INDEXED


def test_a_tie_the_store_refuses_leaves_the_text_that_was_there() -> None:
    store = RefusingStore()
    indexer = Indexer(store)
    indexer.apply_one(upsert("two days"))
    before = store.get_state("deliveries")
    assert before is not None
    with pytest.raises(PoisonEvent, match="refused"):
        indexer.apply_one(upsert("five days", labels=[REFUSED]))
    assert store.get_state("deliveries") == before
    assert sorted(store.chunks) == sorted(before.chunk_ids), "bad input changes nothing"
