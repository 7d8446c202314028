"""One change event through the seven steps, independent of the transport.

validate -> version guard -> chunk -> write chunks -> write state -> delete step.
The caller marks the offset committable only after ``handle`` returns. Each step
is idempotent, so a crash anywhere followed by redelivery converges to the same
index. ``checkpoint`` is called between steps (a test hook can kill the process
there).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

import pydantic
import structlog

from chunker import ChunkerError, chunk_document
from chunker.model import Chunk
from consumers.errors import PoisonEvent
from deleter.step import delete_older_versions
from events.model import Action, ChangeEvent
from store.base import Store
from store.errors import RejectedDocumentError
from store.model import DocumentState

log = structlog.get_logger(__name__)


class ChunkFunction(Protocol):
    def __call__(
        self,
        document_id: str,
        version: int,
        content: str,
        *,
        content_type: str = ...,
        metadata: Mapping[str, object] | None = ...,
        changed_at: Any = ...,
    ) -> list[Chunk]: ...


class Outcome(StrEnum):
    INDEXED = "indexed"
    DELETED = "deleted"
    SKIPPED_STALE = "skipped_stale"
    SKIPPED_DUPLICATE = "skipped_duplicate"


def parse_event(raw: bytes | None) -> ChangeEvent:
    """Bytes from the transport to a ChangeEvent, or ``PoisonEvent`` saying why not."""
    if raw is None:
        raise PoisonEvent("not_json", "empty message (no value)")
    try:
        json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PoisonEvent("not_json", f"not JSON: {exc}") from exc
    try:
        return ChangeEvent.from_json_bytes(raw)
    except pydantic.ValidationError as exc:
        detail = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise PoisonEvent("schema", f"not a valid ChangeEvent: {detail}") from exc


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
    """The document's state once ``event`` is applied: its version, chunks, or a tombstone.

    The previous version's chunk ids are kept as the delete step's work list.
    """
    deleted = event.action is Action.DELETE
    return DocumentState(
        document_id=event.document_id,
        version=event.version,
        changed_at=event.changed_at,
        indexed_at=datetime.now(UTC),
        chunk_ids=tuple(c.chunk_id for c in chunks),
        content_hash=None if deleted else content_hash(event),
        deleted=deleted,
        superseded_chunk_ids=previous.chunk_ids if previous is not None else (),
    )




class EventProcessor:
    def __init__(
        self,
        store: Store,
        *,
        chunk: ChunkFunction | None = None,
        checkpoint: Callable[[str], None] = lambda _step: None,
        on_unchanged: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.chunk: ChunkFunction = chunk or chunk_document
        self.checkpoint = checkpoint
        self.on_unchanged = on_unchanged
        self.chunks_written = 0
        self.chunks_deleted = 0

    def handle(self, event: ChangeEvent) -> Outcome:
        state = self.store.get_state(event.document_id)
        if state is not None and event.version < state.version:
            return Outcome.SKIPPED_STALE
        if state is not None and event.version == state.version:
            # Redelivery: finish a delete step a crash may have interrupted.
            self._delete_older(event.document_id, state.version, state.superseded_chunk_ids)
            return Outcome.SKIPPED_DUPLICATE
        if event.action is Action.DELETE:
            return self._delete(event, state)
        return self._upsert(event, state)

    def chunks_of(self, event: ChangeEvent) -> list[Chunk]:
        if event.content is None or event.content_type is None:
            raise PoisonEvent("schema", "an upsert without content")  # the model forbids it
        try:
            return self.chunk(
                event.document_id,
                event.version,
                event.content,
                content_type=event.content_type,
                metadata=event.metadata.overrides(),
                changed_at=event.changed_at,
            )
        except ChunkerError as exc:
            raise PoisonEvent("chunker", f"{type(exc).__name__}: {exc}") from exc

    def _upsert(self, event: ChangeEvent, state: DocumentState | None) -> Outcome:
        chunks = self.chunks_of(event)
        new_state = state_after(event, state, chunks)
        if state is not None and state.content_hash == new_state.content_hash:
            self.on_unchanged()
        try:
            self.chunks_written += self.store.write_chunks(chunks)
        except RejectedDocumentError as exc:
            # Take back what this version wrote: bad input changes nothing.
            self.store.delete_chunks(c.chunk_id for c in chunks)
            raise PoisonEvent("rejected", str(exc)) from exc
        self.checkpoint("after-chunk-write")
        return self._commit_state(new_state, Outcome.INDEXED)

    def _delete(self, event: ChangeEvent, state: DocumentState | None) -> Outcome:
        return self._commit_state(state_after(event, state), Outcome.DELETED)

    def _commit_state(self, new_state: DocumentState, outcome: Outcome) -> Outcome:
        if not self.store.put_state(new_state):
            # Another worker stored a newer version meanwhile (a rebalance):
            # remove what we wrote, under the newer version's guard.
            newer = self.store.get_state(new_state.document_id)
            if newer is not None:
                self._delete_older(newer.document_id, newer.version, new_state.chunk_ids)
            return Outcome.SKIPPED_STALE
        self.checkpoint("after-state-write")
        self._delete_older(new_state.document_id, new_state.version, new_state.superseded_chunk_ids)
        self.checkpoint("after-delete-step")
        return outcome

    def _delete_older(self, document_id: str, version: int, known: tuple[str, ...]) -> None:
        result = delete_older_versions(self.store, document_id, version, known)
        self.chunks_deleted += result.deleted
