"""Every store keeps and returns a document's owner (one owner per document).

The contract suite's stores: in-memory, SQLite, and the shared Elasticsearch at :9200
(a unique index prefix per test). A state without an owner stays unowned.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from support.stores import STORE_FACTORIES, StoreFactory

from store import es_mappings
from store.base import Store
from store.batch import get_states, put_states
from store.elasticsearch import ElasticsearchStore
from store.model import DocumentState

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=STORE_FACTORIES)
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    factory: StoreFactory = request.param
    with factory(request) as s:
        yield s


def test_put_state_keeps_the_owner(store: Store) -> None:
    owned = DocumentState("refunds", 2, T0, T0, ("refunds@v2#a",), "h", owner="folder")
    unowned = DocumentState("legacy", 1, T0, T0, ("legacy@v1#a",), "h")
    assert store.put_state(owned) and store.put_state(unowned)
    assert store.get_state("refunds") == owned
    got = store.get_state("legacy")
    assert got is not None and got.owner is None
    store.refresh()
    assert {s.document_id: s.owner for s in store.iter_states()} == {
        "refunds": "folder", "legacy": None}


def test_the_batch_path_keeps_the_owner_and_a_new_version_can_change_it(store: Store) -> None:
    assert put_states(store, [
        DocumentState("a", 1, T0, T0, owner="cms"),
        DocumentState("b", 1, T0, T0, owner="contentful"),
    ]) == set()
    found = get_states(store, ["a", "b", "missing"])
    assert {d: s.owner for d, s in found.items()} == {"a": "cms", "b": "contentful"}
    # a tombstone frees the id (indexing.rules.state_after); the store just keeps what it is given
    assert store.put_state(DocumentState("a", 2, T0, T0, deleted=True))
    tombstone = store.get_state("a")
    assert tombstone is not None and tombstone.deleted and tombstone.owner is None


@pytest.mark.services
def test_an_elasticsearch_states_index_made_before_owners_gains_the_field(
    elasticsearch_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ensure_ready`` on an existing index adds the ``owner`` keyword (additive mapping);
    a state written before keeps working and is unowned."""
    old = {k: v for k, v in es_mappings.STATE_PROPERTIES.items() if k != "owner"}
    store = ElasticsearchStore.connect(elasticsearch_url, f"t{uuid.uuid4().hex[:12]}")
    try:
        with monkeypatch.context() as patched:
            patched.setattr(es_mappings, "STATE_PROPERTIES", old)
            store.ensure_ready()
        before = DocumentState("legacy", 1, T0, T0)
        assert store.put_state(before)
        mapping = store.client.indices.get_mapping(index=store.names.states)
        assert all("owner" not in m["mappings"]["properties"] for m in mapping.body.values())

        store.ensure_ready()  # the new release starts
        mapping = store.client.indices.get_mapping(index=store.names.states)
        assert [m["mappings"]["properties"]["owner"] for m in mapping.body.values()] == [
            {"type": "keyword"}]
        assert store.get_state("legacy") == before
        assert store.put_state(DocumentState("legacy", 2, T0, T0, owner="folder"))
        got = store.get_state("legacy")
        assert got is not None and got.owner == "folder"
    finally:
        store.delete_everything()
        store.close()
