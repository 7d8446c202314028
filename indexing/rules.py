"""The rules every apply follows, each written once: guard, state transition, take-back.

- ``owner_refusal``: one owner per document. An event from a source other than the
  one the document's state names is refused (poison ``owner``), before the version
  guard, so a conflicting event is refused whatever its version.
- ``guard``: the index never goes back in time. A version below the indexed one
  is stale, the indexed one a redelivery unless it changes something (a tie: other
  content, or a delete of a live document); a newer one is applied.
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
from foundation.comparison import owned_elsewhere
from indexing.errors import PoisonEvent
from indexing.model import Outcome
from store.model import DocumentState

# (version below which chunks go, chunk ids known to be older): the delete step's input.
DeleteTarget = tuple[int, tuple[str, ...]]


def owner_refusal(event: ChangeEvent, state: DocumentState | None) -> PoisonEvent | None:
    """``PoisonEvent("owner")`` when ``state`` belongs to another source than ``event``.

    The owner rule is ``foundation.comparison.owned_elsewhere``: an event without a
    source (queued before owners existed) and a state without an owner (written before,
    or a tombstone) are not checked: nothing says who they belong to, and refusing them
    would dead-letter a whole queue after an upgrade.
    """
    if state is None or not owned_elsewhere(state.owner, event.source):
        return None
    return PoisonEvent(
        "owner",
        f"document {event.document_id!r} belongs to source {state.owner!r}; this "
        f"{event.action.value} (version {event.version}) comes from source "
        f"{event.source!r}. Delete it at {state.owner!r} first to move it "
        "(docs/hardening.md, one owner per document)",
    )


def guard(event: ChangeEvent, state: DocumentState | None) -> Outcome | None:
    """Why ``event`` is skipped against ``state``, or None to apply it.

    A newer version is applied, an older one is stale. An equal version (a *tie*) is a
    redelivery only when it changes nothing; otherwise it is applied (``is_tie``), so
    that no version is terminal and no edit is dropped unseen:

    - an upsert whose content (``content_hash``) differs from the live state's: a second
      edit stamped with the same version (Sanity stamps ``_updatedAt`` to the second, a
      CMS at the top of the version range has no higher one); the later arrival wins;
    - a delete over a live state: a delete wins a tie, so a document at the largest
      version can still be deleted.

    A tombstone wins every tie: an upsert at its version is the deleted upsert
    redelivered (or a re-creation that needs a newer version), and is skipped, so a late
    redelivery never brings a deleted document back.

    A state without a content hash (written before hashes existed) keeps the old rule:
    an equal version is a redelivery.
    """
    if state is None or event.version > state.version:
        return None
    if event.version < state.version:
        return Outcome.SKIPPED_STALE
    return None if is_tie(event, state) else Outcome.SKIPPED_DUPLICATE


def is_tie(event: ChangeEvent, state: DocumentState | None) -> bool:
    """Is ``event`` at ``state``'s version, yet a change to apply (see ``guard``)?"""
    if state is None or event.version != state.version:
        return False
    if event.action is Action.DELETE:
        return not state.deleted
    return (not state.deleted and state.content_hash is not None
            and state.content_hash != content_hash(event))


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
    kept = previous.owner if previous is not None else None
    # A tombstone frees the id: another source may take it over, with a newer version.
    owner = None if deleted else event.source or kept
    return DocumentState(
        document_id=event.document_id,
        version=event.version,
        changed_at=event.changed_at,
        indexed_at=datetime.now(UTC),
        chunk_ids=tuple(c.chunk_id for c in chunks),
        content_hash=None if deleted else content_hash(event),
        deleted=deleted,
        superseded_chunk_ids=superseded,
        owner=owner,
    )


def take_back(newer: DocumentState | None, written: Sequence[str]) -> DeleteTarget | None:
    """The delete step that removes ``written`` after losing to ``newer``; None if none."""
    if newer is None:
        return None
    return newer.version, tuple(written)


def delete_target(state: DocumentState) -> DeleteTarget:
    """The delete step after ``state`` is recorded: everything older than its version."""
    return state.version, state.superseded_chunk_ids
