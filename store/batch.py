"""Many-document store operations, for stores that offer them, with one-by-one fallbacks.

The worker handles a poll's worth of events with a few round trips instead of
a few per event. A store that can do them natively declares it by implementing
``BatchStore`` (``ElasticsearchStore``: mget, bulk, msearch; ``SQLiteStore``:
one transaction); any other ``Store`` gets the loops below, with the same results
(``tests/unit/store/test_store_contract.py`` checks both paths agree).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from store.base import Store
from store.model import ChunkRef, DocumentState


@runtime_checkable
class BatchStore(Protocol):
    """The batch capability: the three operations in one round trip each."""

    def get_states(self, document_ids: Sequence[str]) -> dict[str, DocumentState]: ...

    def put_states(self, states: Sequence[DocumentState]) -> set[str]:
        """Write each state unless a newer one is stored; the ids that lost that race."""

    def find_chunks_below(self, versions: dict[str, int]) -> list[ChunkRef]: ...


def get_states(store: Store, document_ids: Sequence[str]) -> dict[str, DocumentState]:
    if isinstance(store, BatchStore):
        return store.get_states(document_ids)
    states = {}
    for doc in document_ids:
        state = store.get_state(doc)
        if state is not None:
            states[doc] = state
    return states


def put_states(store: Store, states: Sequence[DocumentState]) -> set[str]:
    """Write each state unless a newer one is stored; the ids that lost that race."""
    if isinstance(store, BatchStore):
        return store.put_states(states)
    return {s.document_id for s in states if not store.put_state(s)}


def find_chunks_below(store: Store, versions: dict[str, int]) -> list[ChunkRef]:
    if isinstance(store, BatchStore):
        return store.find_chunks_below(versions)
    return [
        ref for doc, version in versions.items()
        for ref in store.find_chunks(doc, below_version=version)
    ]
