"""What the indexing core returns: an outcome per event and the counts of one apply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from chunker.model import Chunk
from indexing.errors import PoisonEvent


class ChunkFunction(Protocol):
    """The chunker's signature (``chunker.chunk_document``); tests pass a stand-in."""

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


# Poison is a result, not an exception, in a batch: the other events still apply.
Result = Outcome | PoisonEvent


@dataclass(frozen=True)
class Applied:
    """One apply: a result per event (in the order given) and the chunks it moved.

    The caller adds the counts to its own metrics; the core keeps no counters,
    so two edges sharing one ``Indexer`` never see each other's numbers.
    """

    results: tuple[Result, ...]
    chunks_written: int = 0
    chunks_deleted: int = 0

    def __add__(self, other: Applied) -> Applied:
        return Applied(
            self.results + other.results,
            self.chunks_written + other.chunks_written,
            self.chunks_deleted + other.chunks_deleted,
        )


@dataclass(frozen=True)
class RepairResult:
    """Chunks written and deleted by a same-version repair (``indexing.repair``)."""

    written: int
    deleted: int
