"""Is the index exactly the library's final state? One comparison, reused by every test.

The library's final state after a stream of changes: every document whose
highest-version change is an upsert, chunked at that version; nothing else.
The index equals it when

- each final document has exactly the chunk ids of its last version,
- no chunk exists for any other version, nor for a deleted or renamed document,
- each final document's state holds that version, not deleted, with those chunk ids,
- each deleted document's state is a tombstone at its delete's version,
- no state exists for a document the stream never mentioned.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from chunker import chunk_document
from chunker.model import Chunk
from events.model import Action, ChangeEvent
from store.base import Store

ChunkFn = Callable[..., list[Chunk]]


@dataclass
class ExpectedIndex:
    chunk_ids: dict[str, set[str]] = field(default_factory=dict)  # final documents
    versions: dict[str, int] = field(default_factory=dict)  # every document's last version
    deleted: set[str] = field(default_factory=set)


def expected_index(events: Iterable[ChangeEvent], chunk: ChunkFn = chunk_document) -> ExpectedIndex:
    last: dict[str, ChangeEvent] = {}
    for event in events:
        seen = last.get(event.document_id)
        if seen is None or event.version > seen.version:
            last[event.document_id] = event
    expected = ExpectedIndex()
    for doc, event in last.items():
        expected.versions[doc] = event.version
        if event.action is Action.DELETE:
            expected.deleted.add(doc)
            continue
        chunks = chunk(
            doc, event.version, event.content or "", content_type=event.content_type,
            metadata=event.metadata.overrides(), changed_at=event.changed_at,
        )
        expected.chunk_ids[doc] = {c.chunk_id for c in chunks}
    return expected


def index_differences(store: Store, expected: ExpectedIndex, limit: int = 25) -> list[str]:
    """Every way the index differs from ``expected`` (empty when equal)."""
    store.refresh()
    actual: dict[str, set[str]] = defaultdict(set)
    for ref in store.iter_chunks():
        actual[ref.document_id].add(ref.chunk_id)
    states = {s.document_id: s for s in store.iter_states()}
    problems: list[str] = []
    for doc in sorted(set(actual) | set(expected.chunk_ids)):
        want, got = expected.chunk_ids.get(doc, set()), actual.get(doc, set())
        if want != got:
            problems.append(
                f"{doc}: missing {sorted(want - got)[:5]} unexpected {sorted(got - want)[:5]}"
            )
    for doc, version in sorted(expected.versions.items()):
        state = states.get(doc)
        deleted = doc in expected.deleted
        if state is None:
            problems.append(f"{doc}: no document state (want v{version})")
            continue
        if state.version != version or state.deleted != deleted:
            problems.append(
                f"{doc}: state v{state.version} deleted={state.deleted}, "
                f"want v{version} deleted={deleted}"
            )
        if set(state.chunk_ids) != actual.get(doc, set()):
            problems.append(f"{doc}: state chunk ids disagree with the chunks in the index")
    for doc in sorted(set(states) - set(expected.versions)):
        problems.append(f"{doc}: a state for a document the stream never had")
    return problems[:limit]


def assert_index_equals(store: Store, expected: ExpectedIndex) -> None:
    problems = index_differences(store, expected)
    assert not problems, "index differs from the library's final state:\n" + "\n".join(problems)
