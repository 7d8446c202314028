"""One owner per document on the indexing core, over the in-memory store.

The state names the source that wrote the document; an event from another source is
refused as poison ``owner`` (the worker dead-letters it) and changes nothing, whatever
its version. Events and states from before owners existed are unowned: not checked,
and adopted by the first owned write.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from support.chunks import fake_chunker

from events.model import Action, ChangeEvent
from indexing.core import Indexer
from indexing.errors import PoisonEvent
from indexing.model import Outcome
from store.memory import InMemoryStore
from store.model import DocumentState


def upsert(doc: str, version: int, content: str, source: str | None) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{source}-{doc}-{version}", document_id=doc, action=Action.UPSERT,
        version=version, changed_at=datetime(2026, 1, 1, tzinfo=UTC),
        content_type="text/markdown", content=content, source=source,
    )


def delete(doc: str, version: int, source: str | None) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{source}-{doc}-{version}-d", document_id=doc, action=Action.DELETE,
        version=version, changed_at=datetime(2026, 1, 1, tzinfo=UTC), source=source,
    )


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def indexer(store: InMemoryStore) -> Indexer:
    return Indexer(store, chunk=fake_chunker)


def owner(store: InMemoryStore, doc: str) -> str | None:
    state = store.get_state(doc)
    assert state is not None, f"no state for {doc!r}"
    return state.owner


def test_the_first_owned_write_names_the_owner(store: InMemoryStore, indexer: Indexer) -> None:
    assert indexer.apply_one(upsert("refunds", 1, "alpha sixty days", "folder")) is Outcome.INDEXED
    assert owner(store, "refunds") == "folder"
    assert indexer.apply_one(upsert("refunds", 2, "alpha ninety days", "folder")) is (
        Outcome.INDEXED)
    assert owner(store, "refunds") == "folder"


@pytest.mark.parametrize("version", [1, 2, 10**12])
def test_an_event_from_another_source_is_refused_and_changes_nothing(
    store: InMemoryStore, indexer: Indexer, version: int
) -> None:
    indexer.apply_one(upsert("refunds", 2, "alpha sixty days", "folder"))
    before = (store.get_state("refunds"), sorted(store.chunks))
    with pytest.raises(PoisonEvent) as refused:
        indexer.apply_one(upsert("refunds", version, "alpha hijacked", "cms"))
    assert refused.value.reason == "owner"
    for name in ("'refunds'", "'folder'", "'cms'"):
        assert name in refused.value.message
    assert (store.get_state("refunds"), sorted(store.chunks)) == before


def test_a_delete_from_another_source_is_refused(store: InMemoryStore, indexer: Indexer) -> None:
    indexer.apply_one(upsert("refunds", 1, "alpha sixty days", "folder"))
    result = indexer.apply([delete("refunds", 2, "github")]).results[0]
    assert isinstance(result, PoisonEvent) and result.reason == "owner"
    state = store.get_state("refunds")
    assert state is not None and not state.deleted and state.version == 1


def test_in_a_batch_only_the_foreign_event_is_refused(
    store: InMemoryStore, indexer: Indexer
) -> None:
    indexer.apply_one(upsert("refunds", 1, "alpha sixty days", "folder"))
    applied = indexer.apply([
        upsert("refunds", 9, "alpha hijacked", "cms"),
        upsert("refunds", 2, "alpha ninety days", "folder"),
        upsert("promo", 1, "alpha promo", "cms"),
    ])
    first, second, third = applied.results
    assert isinstance(first, PoisonEvent) and first.reason == "owner"
    assert (second, third) == (Outcome.INDEXED, Outcome.INDEXED)
    refunds = store.get_state("refunds")
    assert refunds is not None and refunds.version == 2 and refunds.owner == "folder"
    assert owner(store, "promo") == "cms"


def test_an_unowned_event_is_applied_and_keeps_the_owner(
    store: InMemoryStore, indexer: Indexer
) -> None:
    """An event queued before owners existed carries no source: it is not refused (that
    would dead-letter the whole queue after an upgrade), and the owner stays."""
    indexer.apply_one(upsert("refunds", 1, "alpha sixty days", "folder"))
    assert indexer.apply_one(upsert("refunds", 2, "alpha old event", None)) is Outcome.INDEXED
    assert owner(store, "refunds") == "folder"


def test_an_unowned_state_is_adopted_by_the_first_owned_write(
    store: InMemoryStore, indexer: Indexer
) -> None:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    store.put_state(DocumentState("refunds", 1, t0, t0))  # written before owners existed
    assert indexer.apply_one(upsert("refunds", 1, "alpha", None)) is Outcome.SKIPPED_DUPLICATE
    assert indexer.apply_one(upsert("refunds", 2, "alpha cms", "cms")) is Outcome.INDEXED
    assert owner(store, "refunds") == "cms"
    with pytest.raises(PoisonEvent, match="belongs to source 'cms'"):
        indexer.apply_one(upsert("refunds", 3, "alpha folder", "folder"))


def test_a_delete_at_the_owner_frees_the_id_for_another_source(
    store: InMemoryStore, indexer: Indexer
) -> None:
    """The deliberate move: delete at the old owner, then the new one writes a newer version."""
    indexer.apply_one(upsert("refunds", 1, "alpha cms", "cms"))
    assert indexer.apply_one(delete("refunds", 2, "cms")) is Outcome.DELETED
    tombstone = store.get_state("refunds")
    assert tombstone is not None and tombstone.deleted and tombstone.owner is None
    assert indexer.apply_one(upsert("refunds", 2, "alpha folder", "folder")) is (
        Outcome.SKIPPED_DUPLICATE)  # the version guard still holds: not newer than the tombstone
    assert indexer.apply_one(upsert("refunds", 3, "alpha folder", "folder")) is Outcome.INDEXED
    assert owner(store, "refunds") == "folder"
