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

Each event of a document is judged against the state the batch's events before it
leave, as one by one (an equal version that changes something, a *tie*, is applied:
``rules.guard``). Only the last one applied is chunked, so a poison one that a newer
version of the same batch replaces is not reported poison (it is ``skipped_stale``, as
if it had arrived after the newer one); a last one that is poison is taken out and the
rest judged again. One that the store refuses falls back to the document's other
events of the batch, applied again as a batch without it.

``apply`` returns an ``Applied`` (a result per event, chunks written and
deleted); it changes no counter of its own or of anyone else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

import structlog

from chunker import ChunkerError, chunk_document
from chunker.model import Chunk
from deleter.step import delete_older_versions_many
from events.model import Action, ChangeEvent
from indexing.errors import PoisonEvent
from indexing.limits import check_chunks
from indexing.model import Applied, ChunkFunction, Outcome, Result
from indexing.rules import (
    DeleteTarget,
    content_hash,
    delete_target,
    guard,
    is_tie,
    owner_refusal,
    state_after,
    take_back,
)
from indexing.writer import ChunkWriter
from store.base import Store
from store.batch import get_states, put_states
from store.model import DocumentState

log = structlog.get_logger(__name__)


@dataclass
class _Plan:
    index: int
    state: DocumentState
    chunks: list[Chunk]
    # The batch's other events of the document (poison left out), in their order: applied
    # again without this one if the store refuses it.
    older: list[int]
    # Chunk ids of the indexed version when this plan rewrites that same version (a tie):
    # deleted once the new chunks are written, before the state names them.
    replaced: tuple[str, ...] = ()


def tie_chunks(event: ChangeEvent, chunks: list[Chunk]) -> list[Chunk]:
    """The chunks of a tie (an equal version that changes the content, ``rules.guard``),
    their ids marked with the content's revision: ``<id>@v<version>#<slug>~<rev>``.

    They must not reuse the indexed text's ids: a store refusing the new text would then
    take back the old one with it (bad input changes nothing), and a rewritten SQLite row
    keeps the vector of the text it had. The version in the id is unchanged, so the
    delete step, the sweep and the search's current-version filter read it as before.
    """
    revision = content_hash(event)[:12]
    return [c.model_copy(update={"chunk_id": f"{c.chunk_id}~{revision}"}) for c in chunks]


class Indexer:
    """Applies change events to one store; shared by the worker loops and the reindex."""

    def __init__(
        self,
        store: Store,
        *,
        chunk: ChunkFunction | None = None,
        checkpoint: Callable[[str], None] = lambda _step: None,
        on_unchanged: Callable[[], None] = lambda: None,
        on_tie: Callable[[], None] = lambda: None,
        flush_chunks: int = 500,
    ) -> None:
        if flush_chunks < 1:
            raise ValueError(f"flush_chunks must be at least 1, got {flush_chunks!r}")
        self.store = store
        self.chunk: ChunkFunction = chunk or chunk_document
        self.checkpoint = checkpoint
        self.on_unchanged = on_unchanged  # a new version whose content did not change
        self.on_tie = on_tie  # an equal version applied (rules.guard): a change, not a repeat
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
        # A tie's new chunks are written: the replaced text of that same version goes now,
        # before the state names the new chunks (a crash between the two re-applies it).
        replaced = [cid for plan in plans.values() for cid in plan.replaced]
        replaced_deleted = self.store.delete_chunks(replaced) if replaced else 0
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
        for group in fallback:
            again = self.apply([events[index] for index in group])
            for index, result in zip(group, again.results, strict=True):
                results[index] = result
            written += again.chunks_written
            deleted += again.chunks_deleted
        return Applied(
            tuple(r if r is not None else Outcome.SKIPPED_STALE for r in results), written,
            deleted + replaced_deleted,
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
        """The one version of a document this batch writes; the others' results set.

        Each event is judged against the state the events before it leave, as if they
        came one by one (``_fold``); the last one applied is written. One that turns out
        poison is taken out and the rest judged again, as one by one it changes nothing.
        """
        poisoned: set[int] = set()
        while True:
            applied, ties = self._fold(events, [i for i in indices if i not in poisoned],
                                       state, results)
            if not applied:
                return None
            i = applied[-1]
            event = events[i]
            tie = state is not None and event.version == state.version
            replaced = state.chunk_ids if state is not None and tie else ()
            try:
                chunks = [] if event.action is Action.DELETE else self.chunks_of(event)
                if tie and chunks:
                    chunks = tie_chunks(event, chunks)
                    check_chunks(event.document_id, chunks)
            except PoisonEvent as poison:
                results[i] = poison
                poisoned.add(i)
                continue
            break
        for j in ties:
            self._tie(events[j], state)
        rest = applied[:-1]
        for j in rest:
            same = events[j].version == event.version
            results[j] = Outcome.SKIPPED_DUPLICATE if same else Outcome.SKIPPED_STALE
        new_state = state_after(event, state, chunks)
        digest = new_state.content_hash
        if digest is not None and state is not None and state.content_hash == digest:
            self.on_unchanged()
        others = [j for j in indices if j != i and j not in poisoned]
        return _Plan(i, new_state, chunks, others, replaced)

    @staticmethod
    def _fold(
        events: Sequence[ChangeEvent],
        indices: list[int],
        state: DocumentState | None,
        results: list[Result | None],
    ) -> tuple[list[int], list[int]]:
        """(the events applied one after the other, in order; those of them that are ties);
        the others' results (owner refusal, stale, duplicate) set."""
        applied: list[int] = []
        ties: list[int] = []
        current = state
        for i in indices:
            event = events[i]
            refused = owner_refusal(event, current)
            if refused is not None:
                results[i] = refused
                continue
            skipped = guard(event, current)
            if skipped is not None:
                results[i] = skipped
                if current is not None and current.deleted and event.version == \
                        current.version and event.action is Action.UPSERT:
                    log.warning("upsert at the version of the document's deletion skipped: "
                                "a deleted document comes back only at a newer version",
                                document_id=event.document_id, version=event.version,
                                source=event.source)
                continue
            if is_tie(event, current):
                ties.append(i)
            applied.append(i)
            current = state_after(event, current)
        return applied, ties

    def _tie(self, event: ChangeEvent, state: DocumentState | None) -> None:
        """An equal version that changes something is applied (``rules.guard``): counted
        and logged, since it means two changes of the source carried one version."""
        self.on_tie()
        log.warning(
            "equal version applied: the source sent two different changes with one version; "
            "the later one replaces the earlier",
            document_id=event.document_id, version=event.version, action=event.action.value,
            indexed="deleted" if state is not None and state.deleted else "live",
            source=event.source,
        )

    def _finish_writes(
        self,
        writer: ChunkWriter,
        events: Sequence[ChangeEvent],
        plans: dict[str, _Plan],
        results: list[Result | None],
    ) -> tuple[int, list[list[int]]]:
        """Wait for every chunk write; a refused document is poison and falls back."""
        written, refused_slices = writer.finish()
        fallback: list[list[int]] = []
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
                fallback.append(plan.older)
        return written, fallback
