"""An in-memory store with the same contract as the Elasticsearch one (tests, fakes)."""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import UTC, datetime

from chunker.model import Chunk
from store.base import MAX_KEYWORD_BYTES, keyword_too_long
from store.errors import RejectedDocumentError
from store.model import ChunkRef, DocumentState


class InMemoryStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.chunks: dict[str, tuple[Chunk, datetime]] = {}
        self.states: dict[str, DocumentState] = {}

    def ensure_ready(self) -> None:
        return None

    def get_state(self, document_id: str) -> DocumentState | None:
        with self._lock:
            return self.states.get(document_id)

    def put_state(self, state: DocumentState) -> bool:
        with self._lock:
            stored = self.states.get(state.document_id)
            if stored is not None and stored.version > state.version:
                return False
            self.states[state.document_id] = state
            return True

    def write_chunks(self, chunks: Sequence[Chunk]) -> int:
        now = datetime.now(UTC)
        refused: list[str] = []
        with self._lock:
            for chunk in chunks:
                bad = keyword_too_long(chunk)
                if bad is not None:
                    refused.append(chunk.chunk_id)
                    continue
                self.chunks[chunk.chunk_id] = (chunk, now)
        if refused:
            raise RejectedDocumentError(
                f"keyword longer than {MAX_KEYWORD_BYTES} bytes in chunks {refused}",
                item_ids=tuple(refused),
            )
        return len(chunks)

    def delete_chunks(self, chunk_ids: Iterable[str]) -> int:
        with self._lock:
            return sum(self.chunks.pop(cid, None) is not None for cid in chunk_ids)

    def find_chunks(
        self, document_id: str, *, below_version: int | None = None
    ) -> Iterator[ChunkRef]:
        return iter(
            [
                ref
                for ref in self.iter_chunks()
                if ref.document_id == document_id
                and (below_version is None or ref.version < below_version)
            ]
        )

    def iter_chunks(self) -> Iterator[ChunkRef]:
        with self._lock:
            items = sorted(self.chunks.items())
        return iter(
            [ChunkRef(cid, c.document_id, c.version, at) for cid, (c, at) in items]
        )

    def iter_states(self) -> Iterator[DocumentState]:
        with self._lock:
            return iter(sorted(self.states.values(), key=lambda s: s.document_id))

    # -- what changed (store.base.ChangeReads) --------------------------------
    def iter_states_since(self, since: datetime) -> Iterator[DocumentState]:
        return iter([s for s in self.iter_states() if s.indexed_at >= since])

    def iter_chunks_since(self, since: datetime) -> Iterator[ChunkRef]:
        return iter([c for c in self.iter_chunks()
                     if c.indexed_at is not None and c.indexed_at >= since])

    def iter_chunks_of(self, document_ids: Collection[str]) -> Iterator[ChunkRef]:
        wanted = set(document_ids)
        return iter([c for c in self.iter_chunks() if c.document_id in wanted])

    def count_chunks(self) -> int:
        with self._lock:
            return len(self.chunks)

    def refresh(self) -> None:
        return None

    def close(self) -> None:
        return None
