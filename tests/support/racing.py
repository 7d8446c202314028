"""A store where another worker gets in between: the lost-race cases of the indexing tests."""

from __future__ import annotations

from collections.abc import Sequence

from chunker.model import Chunk
from events.model import ChangeEvent
from indexing.core import Indexer
from store.memory import InMemoryStore
from support.chunks import fake_chunker


class RacingStore(InMemoryStore):
    """Applies ``newer`` (another worker's event) right after the next chunk write."""

    def __init__(self, newer: ChangeEvent | None = None) -> None:
        super().__init__()
        self.newer = newer

    def write_chunks(self, chunks: Sequence[Chunk]) -> int:
        written = super().write_chunks(chunks)
        newer, self.newer = self.newer, None
        if newer is not None:
            Indexer(self, chunk=fake_chunker).apply_one(newer)
        return written
