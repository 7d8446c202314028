"""A batch gives the same index as the same events one by one (in-memory store)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.chunks import fake_chunker
from support.refusing_store import REFUSED, RefusingStore

from chunker.model import Chunk
from events.model import Action, ChangeEvent, EventMetadata
from indexing.core import Indexer
from indexing.errors import PoisonEvent
from indexing.model import Outcome
from store.errors import TransientStoreError
from store.memory import InMemoryStore


def make(doc: str, version: int, kind: str) -> ChangeEvent:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    if kind == "delete":
        return ChangeEvent(event_id=f"{doc}{version}", document_id=doc, action=Action.DELETE,
                           version=version, changed_at=when)
    content = {"ok": f"alpha {doc} v{version}\n\nbeta part", "boom": "alpha\n\nBOOM",
               "same": "alpha same"}.get(kind, "alpha rejected")
    labels = [REFUSED] if kind == "rejected" else None
    return ChangeEvent(event_id=f"{doc}{version}", document_id=doc, action=Action.UPSERT,
                       version=version, changed_at=when, content_type="text/markdown",
                       content=content, metadata=EventMetadata(access_labels=labels))


Snapshot = tuple[list[str], list[tuple[str, int, bool, tuple[str, ...]]]]


def snapshot(store: InMemoryStore) -> Snapshot:
    """Chunk ids and states; a tie's revision mark (``~<rev>``, ``indexing.core.tie_chunks``)
    left out: two edits at one version give the same chunks whether they came in one batch
    (no tie: the first never reached the store) or one by one (a tie)."""
    def plain(chunk_id: str) -> str:
        return chunk_id.partition("~")[0]

    states = [(s.document_id, s.version, s.deleted, tuple(plain(c) for c in s.chunk_ids))
              for s in store.iter_states()]
    return sorted(plain(c) for c in store.chunks), states


def one_by_one(events: list[ChangeEvent]) -> InMemoryStore:
    store = RefusingStore()
    proc = Indexer(store, chunk=fake_chunker)
    for e in events:
        with contextlib.suppress(PoisonEvent):
            proc.apply_one(e)
    return store


def in_batches(
    events: list[ChangeEvent], size: int, behind: Executor | None = None
) -> tuple[InMemoryStore, list[object]]:
    store = RefusingStore()
    indexer = Indexer(store, chunk=fake_chunker, flush_chunks=1)
    results: list[object] = []
    for start in range(0, len(events), size):
        results.extend(indexer.apply(events[start : start + size], write_behind=behind).results)
    return store, results


streams = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.integers(min_value=1, max_value=6),
        st.sampled_from(["ok", "ok", "ok", "same", "delete", "boom", "rejected"]),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(stream=streams, size=st.integers(min_value=1, max_value=12), behind=st.booleans())
def test_any_stream_in_any_batches_ends_like_one_by_one(
    stream: list[tuple[str, int, str]], size: int, behind: bool
) -> None:
    """Also with the chunk writes behind, one slice per document, on another thread."""
    events = [make(*item) for item in stream]
    with ThreadPoolExecutor(max_workers=1) as executor:
        store, results = in_batches(events, size, executor if behind else None)
    assert len(results) == len(events)
    assert snapshot(store) == snapshot(one_by_one(events))


def test_the_newest_version_of_a_batch_is_the_one_written() -> None:
    events = [make("a", 1, "ok"), make("a", 2, "ok"), make("b", 1, "ok"), make("a", 3, "ok"),
              make("a", 3, "ok"), make("b", 2, "delete")]
    store, results = in_batches(events, 10)
    assert results == [Outcome.SKIPPED_STALE, Outcome.SKIPPED_STALE, Outcome.SKIPPED_STALE,
                       Outcome.INDEXED, Outcome.SKIPPED_DUPLICATE, Outcome.DELETED]
    assert sorted(store.chunks) == ["a@v3#alpha", "a@v3#beta"]


def test_poison_newest_falls_back_to_the_older_version_of_the_batch() -> None:
    events = [make("a", 1, "ok"), make("a", 2, "boom"),
              make("b", 1, "ok"), make("b", 2, "rejected")]
    store, results = in_batches(events, 10)
    kinds = [type(r).__name__ for r in results]
    assert kinds == ["Outcome", "PoisonEvent", "Outcome", "PoisonEvent"]
    assert [r.reason for r in results if isinstance(r, PoisonEvent)] == ["chunker", "rejected"]
    assert results[0] is Outcome.INDEXED and results[2] is Outcome.INDEXED
    assert sorted(store.chunks) == ["a@v1#alpha", "a@v1#beta", "b@v1#alpha", "b@v1#beta"]


class _FlakyStore(InMemoryStore):
    """Refuses its second bulk write of chunks with a transient error."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def write_chunks(self, chunks: Sequence[Chunk]) -> int:
        self.calls += 1
        if self.calls == 2:
            raise TransientStoreError("Elasticsearch went away")
        return super().write_chunks(chunks)


def test_a_failed_slice_fails_the_batch_after_every_slice_is_done() -> None:
    """No write is left in flight when the batch is retried, and the retry converges."""
    store = _FlakyStore()
    indexer = Indexer(store, chunk=fake_chunker, flush_chunks=1)
    events = [make(doc, 1, "ok") for doc in "abc"]
    with ThreadPoolExecutor(max_workers=1) as executor:
        with pytest.raises(TransientStoreError):
            indexer.apply(events, write_behind=executor)
        assert store.calls == 3  # the third slice was still written
        assert list(store.iter_states()) == []  # no state before every chunk is written
        assert indexer.apply(events, write_behind=executor).results == (Outcome.INDEXED,) * 3
    assert snapshot(store) == snapshot(one_by_one(events))
