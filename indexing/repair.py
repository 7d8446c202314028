"""Same-version repair: make the chunks present match the version the index holds.

The version guard treats an event at the indexed version as a redelivery (it
only finishes the delete step), which is right for events but cannot restore
chunks lost from the index. Repair therefore re-chunks the source's document
with the indexer's own ``chunks_of``, writes the chunks (same deterministic
ids), records the state at the same version (``rules.state_after``), and
removes what does not belong: chunks of this version the new chunking does not
have, and older versions (the delete step). A state write that loses to a newer
version takes back what it wrote (``rules.take_back``), like any apply.
"""

from __future__ import annotations

from deleter.step import delete_older_versions
from events.model import ChangeEvent
from indexing.core import Indexer
from indexing.model import RepairResult
from indexing.rules import state_after, take_back
from store.base import Store
from store.model import DocumentState


def remove_leftovers(store: Store, state: DocumentState) -> RepairResult:
    """Only the delete step: chunks below a live state's version, or of a tombstone."""
    below = state.version + 1 if state.deleted else state.version
    result = delete_older_versions(store, state.document_id, below, state.superseded_chunk_ids)
    return RepairResult(written=0, deleted=result.deleted)


def rewrite(indexer: Indexer, event: ChangeEvent, state: DocumentState) -> RepairResult:
    """Rewrite ``event`` (an upsert at ``state.version``) over what the index holds."""
    if event.version != state.version:
        raise ValueError(
            f"a repair rewrites the indexed version: event version {event.version} "
            f"!= state version {state.version} of {event.document_id!r}"
        )
    store = indexer.store
    chunks = indexer.chunks_of(event)  # PoisonEvent on failure
    written = store.write_chunks(chunks)
    new_state = state_after(event, state, chunks)
    if not store.put_state(new_state):
        target = take_back(store.get_state(event.document_id), new_state.chunk_ids)
        if target is None:
            return RepairResult(written=written, deleted=0)
        gone = delete_older_versions(store, event.document_id, *target).deleted
        return RepairResult(written=written, deleted=gone)
    keep = set(new_state.chunk_ids)
    strays = [
        ref.chunk_id
        for ref in store.find_chunks(event.document_id, below_version=event.version + 1)
        if ref.version == event.version and ref.chunk_id not in keep
    ]
    stray_ids = strays + [cid for cid in state.chunk_ids if cid not in keep]
    deleted = store.delete_chunks(stray_ids) if stray_ids else 0
    version, known = new_state.version, new_state.superseded_chunk_ids
    deleted += delete_older_versions(store, event.document_id, version, known).deleted
    return RepairResult(written=written, deleted=deleted)
