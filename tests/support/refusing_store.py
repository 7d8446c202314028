"""An in-memory store that refuses, as Elasticsearch does a document it cannot map, every
chunk carrying the label ``REFUSED``: the store-rejection path of the indexing core,
now that the core itself refuses every value a store cannot hold before writing."""

from __future__ import annotations

from collections.abc import Sequence

from chunker.model import Chunk
from store.errors import RejectedDocumentError
from store.memory import InMemoryStore

REFUSED = "refused-by-the-store"


class RefusingStore(InMemoryStore):
    def write_chunks(self, chunks: Sequence[Chunk]) -> int:
        refused = tuple(c.chunk_id for c in chunks if REFUSED in c.metadata.access_labels)
        written = super().write_chunks([c for c in chunks if c.chunk_id not in refused])
        if refused:
            raise RejectedDocumentError(f"mapping refused chunks {list(refused)}", item_ids=refused)
        return written
