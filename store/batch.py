"""Many-document store operations, for stores that offer them, with one-by-one fallbacks.

The worker handles a poll's worth of events with a few round trips instead of
a few per event. ``ElasticsearchStore`` implements ``get_states``,
``put_states`` and ``find_chunks_below`` natively (mget, bulk, msearch); any
other ``Store`` gets the loops below, with the same results.
"""

from __future__ import annotations

from collections.abc import Sequence

from store.base import Store
from store.model import ChunkRef, DocumentState


def get_states(store: Store, document_ids: Sequence[str]) -> dict[str, DocumentState]:
    native = getattr(store, "get_states", None)
    if native is not None:
        result: dict[str, DocumentState] = native(document_ids)
        return result
    states = {}
    for doc in document_ids:
        state = store.get_state(doc)
        if state is not None:
            states[doc] = state
    return states


def put_states(store: Store, states: Sequence[DocumentState]) -> set[str]:
    """Write each state unless a newer one is stored; the ids that lost that race."""
    native = getattr(store, "put_states", None)
    if native is not None:
        lost: set[str] = native(states)
        return lost
    return {s.document_id for s in states if not store.put_state(s)}


def find_chunks_below(store: Store, versions: dict[str, int]) -> list[ChunkRef]:
    native = getattr(store, "find_chunks_below", None)
    if native is not None:
        refs: list[ChunkRef] = native(versions)
        return refs
    return [
        ref for doc, version in versions.items()
        for ref in store.find_chunks(doc, below_version=version)
    ]
