"""A poll's worth of events in a few round trips, with the same outcome as one by one.

Per document, only the newest applicable version of the batch is written:
an older one would be overwritten and deleted a moment later anyway, which is
what the version guard does when the events come one by one. Then, for the
whole batch: one ``mget`` of the states (the guard), one bulk write of the
chunks, one bulk write of the states (each guarded by ``external_gte``), one
``msearch`` plus one bulk delete (the delete step). The order of the steps,
and so every crash argument of ``docs/indexing.md``, is unchanged; the
checkpoints are now per batch.

With a ``write_behind`` executor (the Kafka worker's; Elasticsearch's client is
thread-safe), the chunks are written in slices of ``flush_chunks`` while the
next documents of the batch are still being chunked: chunking is CPU work in
this process, a bulk write mostly waiting on Elasticsearch, so the two overlap.
All slices are finished (or failed) before the states are written.

A superseded version is never chunked, so a poison one that a newer version of
the same batch replaces is not dead-lettered (it is counted ``skipped_stale``,
as if it had arrived after the newer one). A newest version that the store
refuses falls back to the older versions of the batch, one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field

from chunker.model import Chunk
from consumers.errors import PoisonEvent
from consumers.processor import EventProcessor, Outcome, state_after
from deleter.step import delete_older_versions_many
from events.model import Action, ChangeEvent
from store.batch import get_states, put_states
from store.errors import RejectedDocumentError
from store.model import DocumentState

Result = Outcome | PoisonEvent


@dataclass
class _Plan:
    index: int
    state: DocumentState
    chunks: list[Chunk]
    older: list[int]  # applicable older versions of the batch, newest first


@dataclass
class _ChunkWriter:
    """The batch's chunk writes, started in slices while later documents are chunked."""

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


class BatchProcessor:
    def __init__(
        self,
        single: EventProcessor,
        *,
        write_behind: Executor | None = None,
        flush_chunks: int = 500,
    ) -> None:
        self.single = single
        self.store = single.store
        self.write_behind = write_behind
        self.flush_chunks = flush_chunks

    def handle_batch(self, events: Sequence[ChangeEvent]) -> list[Result]:
        results: list[Result | None] = [None] * len(events)
        by_doc: dict[str, list[int]] = {}
        for i, event in enumerate(events):
            by_doc.setdefault(event.document_id, []).append(i)
        stored = get_states(self.store, list(by_doc))
        plans: dict[str, _Plan] = {}
        redelivered: dict[str, DocumentState] = {}
        writer = _ChunkWriter(self.store.write_chunks, self.write_behind, self.flush_chunks)
        for doc, indices in by_doc.items():
            plan = self._plan(events, indices, stored.get(doc), results)
            if plan is not None:
                plans[doc] = plan
                writer.add(plan.chunks)
            state = stored.get(doc)
            if state is not None and any(events[i].version == state.version for i in indices):
                redelivered[doc] = state
        fallback = self._finish_writes(writer, events, plans, results)
        self.single.checkpoint("after-chunk-write")
        lost = put_states(self.store, [p.state for p in plans.values()])
        self.single.checkpoint("after-state-write")
        targets = {d: (s.version, s.superseded_chunk_ids) for d, s in redelivered.items()}
        for doc, plan in plans.items():
            if doc not in lost:
                known = plan.state.superseded_chunk_ids + targets.get(doc, (0, ()))[1]
                targets[doc] = (plan.state.version, known)
        newer = get_states(self.store, sorted(lost))
        for doc in lost:  # another worker stored a newer version: take back what we wrote
            plan = plans.pop(doc)
            results[plan.index] = Outcome.SKIPPED_STALE
            if doc in newer:
                targets[doc] = (newer[doc].version, plan.state.chunk_ids)
        self.single.chunks_deleted += delete_older_versions_many(self.store, targets).deleted
        self.single.checkpoint("after-delete-step")
        for plan in plans.values():
            results[plan.index] = Outcome.DELETED if plan.state.deleted else Outcome.INDEXED
        for index in fallback:
            try:
                results[index] = self.single.handle(events[index])
            except PoisonEvent as poison:
                results[index] = poison
        return [r if r is not None else Outcome.SKIPPED_STALE for r in results]

    def _plan(
        self,
        events: Sequence[ChangeEvent],
        indices: list[int],
        state: DocumentState | None,
        results: list[Result | None],
    ) -> _Plan | None:
        applicable = []
        for i in indices:
            version = events[i].version
            if state is not None and version < state.version:
                results[i] = Outcome.SKIPPED_STALE
            elif state is not None and version == state.version:
                results[i] = Outcome.SKIPPED_DUPLICATE
            else:
                applicable.append(i)
        applicable.sort(key=lambda i: events[i].version, reverse=True)
        for n, i in enumerate(applicable):
            event = events[i]
            try:
                chunks = [] if event.action is Action.DELETE else self.single.chunks_of(event)
            except PoisonEvent as poison:
                results[i] = poison
                continue
            rest = applicable[n + 1 :]
            for j in rest:
                same = events[j].version == event.version
                results[j] = Outcome.SKIPPED_DUPLICATE if same else Outcome.SKIPPED_STALE
            return _Plan(i, self._new_state(event, state, chunks), chunks, rest)
        return None

    def _new_state(
        self, event: ChangeEvent, state: DocumentState | None, chunks: list[Chunk]
    ) -> DocumentState:
        new_state = state_after(event, state, chunks)
        digest = new_state.content_hash
        if digest is not None and state is not None and state.content_hash == digest:
            self.single.on_unchanged()
        return new_state

    def _finish_writes(
        self,
        writer: _ChunkWriter,
        events: Sequence[ChangeEvent],
        plans: dict[str, _Plan],
        results: list[Result | None],
    ) -> list[int]:
        """Wait for every chunk write; a refused document is poison and falls back."""
        written, refused_slices = writer.finish()
        self.single.chunks_written += written
        fallback: list[int] = []
        for chunks, exc in refused_slices:
            owner = {c.chunk_id: c.document_id for c in chunks}
            refused = {owner[cid] for cid in exc.item_ids if cid in owner}
            for doc in sorted(refused):
                if doc not in plans:
                    continue
                plan = plans.pop(doc)
                self.store.delete_chunks(c.chunk_id for c in plan.chunks)
                results[plan.index] = PoisonEvent("rejected", f"{doc!r}: {exc}")
                fallback.extend(sorted(plan.older, key=lambda i: events[i].version))
        return fallback
