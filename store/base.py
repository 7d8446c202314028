"""The store interface: what the worker, the delete step and the sweep need.

Implemented by ``store.elasticsearch.ElasticsearchStore`` (the real index),
``store.memory.InMemoryStore`` (for unit tests) and later the embedded SQLite
store. ``tests/unit/store/test_contract.py`` runs one suite against all of them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from chunker.model import Chunk
from store.model import ChunkRef, DocumentState

# Elasticsearch refuses a keyword term longer than this many UTF-8 bytes; every
# store enforces the same limit so that the same event is poison everywhere.
MAX_KEYWORD_BYTES = 32766


def keyword_too_long(chunk: Chunk) -> str | None:
    """The first keyword value of the chunk that no store accepts, if any."""
    keywords = [
        chunk.chunk_id,
        chunk.document_id,
        chunk.section,
        *chunk.metadata.access_labels,
        *chunk.metadata.scope,
        *chunk.metadata.keywords,
    ]
    for value in keywords:
        if len(value.encode("utf-8")) > MAX_KEYWORD_BYTES:
            return value
    return None


class Store(Protocol):
    def ensure_ready(self) -> None:
        """Create what the store needs (idempotent)."""

    def get_state(self, document_id: str) -> DocumentState | None:
        """The document's state, read in real time (a write is visible at once)."""

    def put_state(self, state: DocumentState) -> bool:
        """Write the state unless the stored one has a higher version.

        Returns False (and changes nothing) when the stored version is higher:
        the check and the write are one atomic step, so two workers racing on
        one document cannot move it back in time.
        """

    def write_chunks(self, chunks: Sequence[Chunk]) -> int:
        """Write (or overwrite, same id) the chunks; returns how many were written.

        Raises ``RejectedDocumentError`` naming the refused ids; chunks of the same
        call that were accepted stay written.
        """

    def delete_chunks(self, chunk_ids: Iterable[str]) -> int:
        """Delete by id; an id already gone counts as success. Returns how many existed."""

    def find_chunks(
        self, document_id: str, *, below_version: int | None = None
    ) -> Iterator[ChunkRef]:
        """Chunks of one document, all or only those with ``version < below_version``.

        Searches may lag writes by the refresh interval; callers that must see a
        fresh write use the chunk ids recorded in the document state.
        """

    def iter_chunks(self) -> Iterator[ChunkRef]:
        """Every chunk in the store (for the sweep and the equality check)."""

    def iter_states(self) -> Iterator[DocumentState]:
        """Every document state in the store."""

    def refresh(self) -> None:
        """Make every write visible to searches (tests and the sweep)."""

    def close(self) -> None:
        """Release connections."""


@runtime_checkable
class ChangeReads(Protocol):
    """What a store may add so that the freshness monitor reads only what changed.

    A store without them is read whole by the monitor's every cycle (its figures are
    the same, only slower). ``since`` compares with the ``indexed_at`` the writer
    stamped (a state's, a chunk's); a write is seen once a search can see it.
    """

    def iter_states_since(self, since: datetime) -> Iterator[DocumentState]:
        """Every state with ``indexed_at >= since``."""

    def iter_chunks_since(self, since: datetime) -> Iterator[ChunkRef]:
        """Every chunk with ``indexed_at >= since``."""

    def iter_chunks_of(self, document_ids: Collection[str]) -> Iterator[ChunkRef]:
        """Every chunk of these documents."""

    def count_chunks(self) -> int:
        """How many chunks the store holds."""
