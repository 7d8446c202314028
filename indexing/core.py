"""The one apply algorithm: a batch of change events into the store, one event a batch of one.

Per document, only the newest applicable version of the batch is written: an
older one would be overwritten and deleted a moment later anyway, which is
what the version guard does when the events come one by one. Then, for the
whole batch: one ``mget`` of the states (the guard), one bulk write of the
chunks, one bulk write of the states (each guarded by ``external_gte``), one
``msearch`` plus one bulk delete (the delete step). The order of the steps is
that of ``docs/indexing.md``: chunks, then states, then the delete step, with a
``checkpoint`` after each (once per call; the crash tests kill the process
there), so a crash anywhere followed by redelivery converges to the same index.

A superseded version is never chunked, so a poison one that a newer version of
the same batch replaces is not reported poison (it is ``skipped_stale``, as if
it had arrived after the newer one). A newest version that the store refuses
falls back to the older versions of the batch, oldest first, each a batch of one.

``apply`` returns an ``Applied`` (a result per event, chunks written and
deleted); it changes no counter of its own or of anyone else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

from chunker import ChunkerError, chunk_document
from chunker.model import Chunk
from deleter.step import delete_older_versions_many
from events.model import Action, ChangeEvent
from indexing.errors import PoisonEvent
from indexing.limits import check_chunks
from indexing.model import Applied, ChunkFunction, Outcome, Result
from indexing.rules import (
    DeleteTarget,
    delete_target,
    guard,
    owner_refusal,
    state_after,
    take_back,
)
from indexing.writer import ChunkWriter
from store.base import Store
from store.batch import get_states, put_states
from store.model import DocumentState


@dataclass
class _Plan:
    index: int
    state: DocumentState
    chunks: list[Chunk]
    older: list[int]  # applicable older versions of the batch, newest first


class Indexer:
    """Applies change events to one store; shared by the worker loops and the reindex."""

    def __init__(
        self,
        store: Store,
        *,
        chunk: ChunkFunction | None = None,
        checkpoint: Callable[[str], None] = lambda _step: None,
        on_unchanged: Callable[[], None] = lambda: None,
        flush_chunks: int = 500,
    ) -> None:
        if flush_chunks < 1:
            raise ValueError(f"flush_chunks must be at least 1, got {flush_chunks!r}")
        self.store = store
        self.chunk: ChunkFunction = chunk or chunk_document
        self.checkpoint = checkpoint
        self.on_unchanged = on_unchanged  # a new version whose content did not change
        self.flush_chunks = flush_chunks

    def apply_one(self, event: ChangeEvent) -> Outcome:
        """``apply`` of a batch of one, for callers with one event; poison is raised."""
        result = self.apply([event]).results[0]
        if isinstance(result, PoisonEvent):
            raise result
        return result

    def apply(
        self, events: Sequence[ChangeEvent], *, write_behind: Executor | None = None
    ) -> Applied:
        """Apply ``events``; with ``write_behind``, chunk writes overlap the chunking."""
        results: list[Result | None] = [None] * len(events)
        by_doc: dict[str, list[int]] = {}
        for i, event in enumerate(events):
            by_doc.setdefault(event.document_id, []).append(i)
        stored = get_states(self.store, list(by_doc))
        plans: dict[str, _Plan] = {}
        redelivered: dict[str, DocumentState] = {}
        writer = ChunkWriter(self.store.write_chunks, write_behind, self.flush_chunks)
        for doc, indices in by_doc.items():
            state = stored.get(doc)
            plan = self._plan(events, indices, state, results)
            if plan is not None:
                plans[doc] = plan
                writer.add(plan.chunks)
            if state is not None and any(events[i].version == state.version for i in indices):
                redelivered[doc] = state  # finish a delete step a crash may have interrupted
        written, fallback = self._finish_writes(writer, events, plans, results)
        self.checkpoint("after-chunk-write")
        lost = put_states(self.store, [p.state for p in plans.values()])
        self.checkpoint("after-state-write")
        targets: dict[str, DeleteTarget] = {d: delete_target(s) for d, s in redelivered.items()}
        for doc, plan in plans.items():
            if doc not in lost:
                version, known = delete_target(plan.state)
                targets[doc] = (version, known + targets.get(doc, (0, ()))[1])
        newer = get_states(self.store, sorted(lost))
        for doc in lost:
            plan = plans.pop(doc)
            results[plan.index] = Outcome.SKIPPED_STALE
            target = take_back(newer.get(doc), plan.state.chunk_ids)
            if target is not None:
                targets[doc] = target
        deleted = delete_older_versions_many(self.store, targets).deleted
        self.checkpoint("after-delete-step")
        for plan in plans.values():
            results[plan.index] = Outcome.DELETED if plan.state.deleted else Outcome.INDEXED
        for index in fallback:
            one = self.apply([events[index]])
            results[index] = one.results[0]
            written += one.chunks_written
            deleted += one.chunks_deleted
        return Applied(
            tuple(r if r is not None else Outcome.SKIPPED_STALE for r in results), written, deleted
        )

    def chunks_of(self, event: ChangeEvent) -> list[Chunk]:
        """The chunks of an upsert, or ``PoisonEvent`` when the chunker cannot make them
        or a store could not hold them (``indexing.limits``)."""
        if event.content is None or event.content_type is None:
            raise PoisonEvent("schema", "an upsert without content")  # the model forbids it
        try:
            chunks = self.chunk(
                event.document_id,
                event.version,
                event.content,
                content_type=event.content_type,
                metadata=event.metadata.overrides(),
                changed_at=event.changed_at,
            )
        except ChunkerError as exc:
            raise PoisonEvent("chunker", f"{type(exc).__name__}: {exc}") from exc
        check_chunks(event.document_id, chunks)  # before anything of this version is written
        return chunks

    def _plan(
        self,
        events: Sequence[ChangeEvent],
        indices: list[int],
        state: DocumentState | None,
        results: list[Result | None],
    ) -> _Plan | None:
        """The one version of a document this batch writes; the others' results set."""
        applicable = []
        for i in indices:
            refused = owner_refusal(events[i], state)
            if refused is not None:
                results[i] = refused
                continue
            skipped = guard(events[i].version, state)
            if skipped is None:
                applicable.append(i)
            else:
                results[i] = skipped
        applicable.sort(key=lambda i: events[i].version, reverse=True)
        for n, i in enumerate(applicable):
            event = events[i]
            try:
                chunks = [] if event.action is Action.DELETE else self.chunks_of(event)
            except PoisonEvent as poison:
                results[i] = poison
                continue
            rest = applicable[n + 1 :]
            for j in rest:
                same = events[j].version == event.version
                results[j] = Outcome.SKIPPED_DUPLICATE if same else Outcome.SKIPPED_STALE
            new_state = state_after(event, state, chunks)
            digest = new_state.content_hash
            if digest is not None and state is not None and state.content_hash == digest:
                self.on_unchanged()
            return _Plan(i, new_state, chunks, rest)
        return None

    def _finish_writes(
        self,
        writer: ChunkWriter,
        events: Sequence[ChangeEvent],
        plans: dict[str, _Plan],
        results: list[Result | None],
    ) -> tuple[int, list[int]]:
        """Wait for every chunk write; a refused document is poison and falls back."""
        written, refused_slices = writer.finish()
        fallback: list[int] = []
        for chunks, exc in refused_slices:
            owner = {c.chunk_id: c.document_id for c in chunks}
            refused = {owner[cid] for cid in exc.item_ids if cid in owner}
            for doc in sorted(refused):
                if doc not in plans:
                    continue
                plan = plans.pop(doc)
                # Take back what this version wrote: bad input changes nothing.
                self.store.delete_chunks(c.chunk_id for c in plan.chunks)
                results[plan.index] = PoisonEvent("rejected", f"{doc!r}: {exc}")
                fallback.extend(sorted(plan.older, key=lambda i: events[i].version))
        return written, fallback
