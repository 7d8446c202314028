"""What the store keeps besides chunks: one state per document, and chunk references.

``DocumentState`` is the index's memory of a document: the version it holds, the
chunk ids of that version, and, for a document deleted at the source, a
tombstone (``deleted=True`` at the delete's version) so that a late upsert of an
older version cannot bring it back, and the name of the source that owns it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class DocumentState:
    document_id: str
    version: int
    changed_at: datetime
    indexed_at: datetime
    chunk_ids: tuple[str, ...] = ()
    content_hash: str | None = None
    deleted: bool = False
    # Chunk ids of the version this one replaced: the delete step's work list,
    # kept so that a delete step interrupted by a crash can be finished on
    # redelivery even before a search can see those chunks.
    superseded_chunk_ids: tuple[str, ...] = field(default=())
    # The source the document belongs to (``folder``, ``cms``, ...): an event from another
    # source is refused (``indexing.rules.owner_refusal``). None: unowned (a state written
    # before owners existed, or a tombstone, which frees the id); the next owned write
    # adopts it.
    owner: str | None = None

    @property
    def tombstone_version(self) -> int | None:
        return self.version if self.deleted else None


@dataclass(frozen=True)
class ChunkRef:
    """The few fields of a stored chunk the delete step and the sweep need."""

    chunk_id: str
    document_id: str
    version: int
    indexed_at: datetime | None
