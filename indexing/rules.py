"""The rules every apply follows, each written once: guard, state transition, take-back.

- ``guard``: the index never goes back in time. A version below the indexed one
  is stale, the indexed one is a redelivery; only a newer one is applied.
- ``state_after``: the document's state once a change is applied. The previous
  version's chunk ids become the delete step's work list; at the same version
  (a repair) the previous work list is kept, since those ids are not older.
- ``take_back``: a state write that lost the race to a newer version (another
  worker after a rebalance, or a worker while the reindex repairs) removes what
  this apply wrote, under the newer version's guard, so it can never remove the
  newer version's own chunks.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime

from chunker.model import Chunk
from events.model import Action, ChangeEvent
from indexing.model import Outcome
from store.model import DocumentState

# (version below which chunks go, chunk ids known to be older): the delete step's input.
DeleteTarget = tuple[int, tuple[str, ...]]


def guard(version: int, state: DocumentState | None) -> Outcome | None:
    """Why an event at ``version`` is skipped against ``state``, or None to apply it."""
    if state is None or version > state.version:
        return None
    return Outcome.SKIPPED_STALE if version < state.version else Outcome.SKIPPED_DUPLICATE


def content_hash(event: ChangeEvent) -> str:
    """What makes two upserts index the same chunks (apart from the version)."""
    digest = hashlib.sha256()
    for part in (
        event.content_type or "",
        event.content or "",
        json.dumps(event.metadata.model_dump(mode="json", exclude_none=True), sort_keys=True),
    ):
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


def state_after(
    event: ChangeEvent, previous: DocumentState | None, chunks: Sequence[Chunk] = ()
) -> DocumentState:
    """The document's state once ``event`` is applied: its version, chunks, or a tombstone."""
    deleted = event.action is Action.DELETE
    if previous is None:
        superseded: tuple[str, ...] = ()
    elif previous.version == event.version:
        superseded = previous.superseded_chunk_ids
    else:
        superseded = previous.chunk_ids
    return DocumentState(
        document_id=event.document_id,
        version=event.version,
        changed_at=event.changed_at,
        indexed_at=datetime.now(UTC),
        chunk_ids=tuple(c.chunk_id for c in chunks),
        content_hash=None if deleted else content_hash(event),
        deleted=deleted,
        superseded_chunk_ids=superseded,
    )


def take_back(newer: DocumentState | None, written: Sequence[str]) -> DeleteTarget | None:
    """The delete step that removes ``written`` after losing to ``newer``; None if none."""
    if newer is None:
        return None
    return newer.version, tuple(written)


def delete_target(state: DocumentState) -> DeleteTarget:
    """The delete step after ``state`` is recorded: everything older than its version."""
    return state.version, state.superseded_chunk_ids
