"""Repair: make the chunks present match a document at the version the index holds.

The worker's version guard treats an event at the indexed version as a
redelivery (it only finishes the delete step), which is right for events but
cannot restore chunks lost from the index. Repair therefore re-chunks the
source's document with the processor's own ``chunks_of``, writes the chunks
(same deterministic ids), records the state at the same version, and removes
what does not belong: chunks of this version the new chunking does not have,
and older versions (the worker's delete step).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from consumers.processor import EventProcessor, content_hash
from deleter.step import delete_older_versions
from events.model import ChangeEvent
from store.model import DocumentState


@dataclass(frozen=True)
class RepairResult:
    written: int
    deleted: int


def remove_leftovers(processor: EventProcessor, state: DocumentState) -> RepairResult:
    """Only the delete step: chunks below a live state's version, or of a tombstone."""
    below = state.version + 1 if state.deleted else state.version
    result = delete_older_versions(
        processor.store, state.document_id, below, state.superseded_chunk_ids
    )
    return RepairResult(written=0, deleted=result.deleted)


def rewrite(processor: EventProcessor, event: ChangeEvent, state: DocumentState) -> RepairResult:
    """Rewrite ``event`` (an upsert at ``state.version``) over what the index holds."""
    store = processor.store
    chunks = processor.chunks_of(event)  # the worker's chunking, PoisonEvent on failure
    written = store.write_chunks(chunks)
    keep = {c.chunk_id for c in chunks}
    recorded = store.put_state(
        DocumentState(
            document_id=event.document_id,
            version=event.version,
            changed_at=event.changed_at,
            indexed_at=datetime.now(UTC),
            chunk_ids=tuple(c.chunk_id for c in chunks),
            content_hash=content_hash(event),
            superseded_chunk_ids=state.superseded_chunk_ids,
        )
    )
    if not recorded:
        # A worker stored a newer version meanwhile: take back what we wrote, under its guard.
        newer = store.get_state(event.document_id)
        below = newer.version if newer is not None else event.version + 1
        gone = delete_older_versions(store, event.document_id, below, tuple(keep)).deleted
        return RepairResult(written=written, deleted=gone)
    strays = [
        ref.chunk_id
        for ref in store.find_chunks(event.document_id, below_version=event.version + 1)
        if ref.version == event.version and ref.chunk_id not in keep
    ]
    stray_ids = strays + [cid for cid in state.chunk_ids if cid not in keep]
    deleted = store.delete_chunks(stray_ids) if stray_ids else 0
    deleted += delete_older_versions(
        store, event.document_id, event.version, state.superseded_chunk_ids
    ).deleted
    return RepairResult(written=written, deleted=deleted)
