"""An apply's chunk writes, started in slices while later documents are still chunked.

Chunking is CPU work in this process, a bulk write mostly waiting on the store,
so with an executor (the Kafka worker's single writer thread; Elasticsearch's
client is thread-safe) the two overlap. ``finish`` waits for every slice, also
after a failure, so no write is left in flight when the caller retries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field

from chunker.model import Chunk
from store.errors import RejectedDocumentError


@dataclass
class ChunkWriter:
    write: Callable[[Sequence[Chunk]], int]
    executor: Executor | None
    flush_chunks: int
    pending: list[Chunk] = field(default_factory=list)
    sent: list[tuple[list[Chunk], Future[int] | None]] = field(default_factory=list)

    def add(self, chunks: list[Chunk]) -> None:
        self.pending.extend(chunks)
        if self.executor is not None and len(self.pending) >= self.flush_chunks:
            self._send()

    def _send(self) -> None:
        chunks, self.pending = self.pending, []
        future = self.executor.submit(self.write, chunks) if self.executor is not None else None
        self.sent.append((chunks, future))

    def finish(self) -> tuple[int, list[tuple[list[Chunk], RejectedDocumentError]]]:
        """Chunks written, and the slices the store refused; waits for every slice."""
        if self.pending:
            self._send()
        written = 0
        refused: list[tuple[list[Chunk], RejectedDocumentError]] = []
        failure: BaseException | None = None
        for chunks, future in self.sent:
            try:
                written += future.result() if future is not None else self.write(chunks)
            except RejectedDocumentError as exc:
                refused.append((chunks, exc))
                written += len(chunks) - len(exc.item_ids)
            except BaseException as exc:  # raised once every slice is done
                failure = failure or exc
        if failure is not None:
            raise failure
        return written, refused
