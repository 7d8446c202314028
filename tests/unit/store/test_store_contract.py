"""One contract, every store: in-memory, Elasticsearch (services), later SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from support.chunks import make_chunk
from support.stores import STORE_FACTORIES, StoreFactory

from store.base import MAX_KEYWORD_BYTES, Store
from store.errors import RejectedDocumentError
from store.model import DocumentState

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(params=STORE_FACTORIES)
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    factory: StoreFactory = request.param
    with factory(request) as s:
        yield s


def ids(store: Store) -> list[str]:
    store.refresh()
    return [ref.chunk_id for ref in store.iter_chunks()]


def state(doc: str, version: int, **kw: object) -> DocumentState:
    return DocumentState(doc, version, T0, T0, **kw)  # type: ignore[arg-type]


def test_written_chunks_are_found_with_their_version(store: Store) -> None:
    chunks = [make_chunk("refund", 1, s) for s in ("a", "b", "c")] + [make_chunk("terms", 2)]
    assert store.write_chunks(chunks) == 4
    assert ids(store) == sorted(c.chunk_id for c in chunks)
    refs = list(store.find_chunks("refund"))
    assert {(r.document_id, r.version) for r in refs} == {("refund", 1)}
    assert all(r.indexed_at is not None for r in refs)


def test_writing_the_same_chunk_twice_keeps_one(store: Store) -> None:
    store.write_chunks([make_chunk("refund", 1)])
    store.write_chunks([make_chunk("refund", 1, text="changed")])
    assert ids(store) == ["refund@v1#intro"]


def test_more_chunks_than_one_bulk_request_holds_are_all_written(store: Store) -> None:
    chunks = [make_chunk("big", 3, f"s{i:03d}") for i in range(40)]
    store.write_chunks(chunks)
    assert len(ids(store)) == 40


def test_find_chunks_below_a_version(store: Store) -> None:
    store.write_chunks([make_chunk("d", v, "x") for v in (1, 2, 3, 4)] + [make_chunk("e", 1)])
    store.refresh()
    found = sorted(r.version for r in store.find_chunks("d", below_version=3))
    assert found == [1, 2]


def test_delete_counts_what_existed_and_missing_ids_are_success(store: Store) -> None:
    store.write_chunks([make_chunk("d", 1, "a"), make_chunk("d", 1, "b")])
    assert store.delete_chunks(["d@v1#a", "d@v1#gone", "never@v9#x"]) == 1
    assert store.delete_chunks(["d@v1#a"]) == 0
    assert ids(store) == ["d@v1#b"]


def test_state_round_trip_and_tombstone(store: Store) -> None:
    assert store.get_state("refund") is None
    s = state("refund", 2, chunk_ids=("refund@v2#a",), content_hash="h",
              superseded_chunk_ids=("refund@v1#a",))
    assert store.put_state(s)
    assert store.get_state("refund") == s
    tomb = state("refund", 3, deleted=True)
    assert store.put_state(tomb)
    got = store.get_state("refund")
    assert got is not None and got.deleted and got.tombstone_version == 3


def test_a_state_never_goes_back_in_time(store: Store) -> None:
    assert store.put_state(state("d", 5, deleted=True))
    assert not store.put_state(state("d", 4, chunk_ids=("d@v4#a",)))
    assert store.get_state("d") == state("d", 5, deleted=True)
    assert store.put_state(state("d", 5, deleted=True, content_hash="again"))  # equal: rewrite


def test_iter_states_lists_every_document(store: Store) -> None:
    for doc, version in (("a", 1), ("b/c", 2), ("z", 7)):
        store.put_state(state(doc, version))
    store.refresh()
    assert [(s.document_id, s.version) for s in store.iter_states()] == [
        ("a", 1), ("b/c", 2), ("z", 7)
    ]


def test_a_keyword_too_long_is_rejected_by_id_and_the_rest_is_written(store: Store) -> None:
    huge = "x" * (MAX_KEYWORD_BYTES + 1)
    bad = make_chunk("d", 1, "bad", metadata={"access_labels": [huge]})
    good = make_chunk("d", 1, "good")
    with pytest.raises(RejectedDocumentError) as caught:
        store.write_chunks([good, bad])
    assert caught.value.item_ids == ("d@v1#bad",)
    assert ids(store) == ["d@v1#good"]


def test_many_document_operations_match_the_one_by_one_ones(store: Store) -> None:
    from store.batch import find_chunks_below, get_states, put_states

    assert put_states(store, [state("a", 2), state("b", 1, deleted=True)]) == set()
    assert put_states(store, [state("a", 1), state("b", 3), state("c", 1)]) == {"a"}
    got = get_states(store, ["a", "b", "c", "missing"])
    assert {d: (s.version, s.deleted) for d, s in got.items()} == {
        "a": (2, False), "b": (3, False), "c": (1, False)
    }
    store.write_chunks([make_chunk(d, v, "x") for d in ("a", "b") for v in (1, 2, 3)])
    store.refresh()
    found = find_chunks_below(store, {"a": 3, "b": 2, "c": 9})
    assert sorted(r.chunk_id for r in found) == ["a@v1#x", "a@v2#x", "b@v1#x"]
