"""Reconcile: make the index the source's current state, through the workers' own core.

Order matters. The index is read first and the source listed second, so a
document created at the source and indexed by a worker while the run starts
is in the listing whenever it is in the index view: it can never look "gone
from the source". Every action then goes through the indexing core the workers use
(the version guard, the state write and the delete step of a change event);
only a same-version chunk repair uses ``indexing.repair``. Events are handed
to ``Indexer.apply`` (the path a worker takes for a poll), ``batch_size`` at
a time: a few round trips per batch, not per document.

Safety:

- the listing is complete or the run fails: an error after any number of
  entries, a duplicate id (a pagination that shifted), or an empty listing
  while the index holds documents raises ``ListingFailedError``; nothing is
  deleted and the run is reported failed;
- a document missing from the listing is deleted only after the source
  confirms it (``get_document`` says not found) and only if its state is
  still the one the plan saw;
- a document another source owns (its state names it) is left alone (``other_owner``):
  never deleted as "gone from the source", nor counted in the deletion cap;
- deletions above ``max_delete_fraction`` of the indexed documents are
  refused unless ``allow_mass_delete``: the run applies the other actions,
  deletes nothing and ends ``refused``;
- everything is idempotent: a run killed anywhere is finished by the next.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

import pydantic
import structlog

from events.model import Action, ChangeEvent
from foundation.comparison import owned_elsewhere
from indexing.core import Indexer
from indexing.errors import CONTENT_REASONS, PoisonEvent
from indexing.repair import remove_leftovers, rewrite
from reindex.errors import ListingFailedError, RunInterrupted
from reindex.index_view import read_index
from reindex.limits import BATCH_SIZE, MAX_DELETE_FRACTION
from reindex.model import Decision, PlannedAction, ReconcileReport
from reindex.plan import plan
from reindex.safety import deletion_cap, list_source
from sources.base import Source, SourceDocument, SourceEntry
from sources.errors import DocumentNotFoundError, SourceDataError, SourceError
from sources.unlisted import with_unlisted
from store.base import Store
from store.errors import RejectedDocumentError, StoreError

log = structlog.get_logger(__name__)

_SAMPLES = 20
# A document that cannot be applied: recorded, the run goes on and ends failed.
_DOCUMENT_ERRORS = (PoisonEvent, RejectedDocumentError, SourceDataError, pydantic.ValidationError)


@dataclass(frozen=True)
class ReconcileOptions:
    dry_run: bool = False
    allow_mass_delete: bool = False
    max_delete_fraction: float = MAX_DELETE_FRACTION


class Reconciler:
    def __init__(
        self,
        source: Source,
        store: Store,
        *,
        indexer: Indexer | None = None,
        options: ReconcileOptions | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        batch_size: int = BATCH_SIZE,
    ) -> None:
        self.source = source
        self.store = store
        self.indexer = indexer or Indexer(store)
        self.batch_size = batch_size
        self.options = options or ReconcileOptions()
        self.should_stop = should_stop
        self._run_tag = uuid.uuid4().hex[:12]
        self._events = 0

    def run(self) -> ReconcileReport:
        """Never raises for a run-level failure: ``report.error`` says why (outcome failed)."""
        report = ReconcileReport(dry_run=self.options.dry_run)
        try:
            self._run(report)
        except (ListingFailedError, RunInterrupted, SourceError, StoreError) as exc:
            report.error = f"{type(exc).__name__}: {exc}"
            log.error("reconcile failed", error=report.error)
        return report

    def _run(self, report: ReconcileReport) -> None:
        clock = time.perf_counter()

        def lap(phase: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            report.seconds[phase] = round(now - clock, 3)
            clock = now

        index = read_index(self.store)
        # This source's live documents (and unowned ones): the deletion cap and the
        # empty-listing check count only what this listing may delete.
        name = self.source.name
        report.indexed_documents = sum(
            1 for d in index.values() if not d.deleted and not owned_elsewhere(d.owner, name))
        lap("read_index")
        listing = list_source(self.source, indexed_live=report.indexed_documents)
        report.source_documents = len(listing)
        # Under a folder the source cannot list, the indexed documents are unreadable, kept.
        listing = {e.document_id: e for e in with_unlisted(listing.values(), index)}
        lap("list_source")
        actions = [a for a in plan(listing, index, name) if self._count(report, a)]
        del index
        lap("decide")
        deletions = [a for a in actions if a.decision is Decision.DELETE]
        report.deletions_allowed = deletion_cap(
            report.indexed_documents, self.options.max_delete_fraction
        )
        if len(deletions) > report.deletions_allowed and not self.options.allow_mass_delete:
            report.refused = True
            log.error(
                "reconcile refuses a mass deletion",
                deletions=len(deletions),
                allowed=report.deletions_allowed,
                indexed=report.indexed_documents,
                confirm="run `policy-indexer reindex --allow-mass-delete` after checking the "
                "source really lost these documents",
                samples=[a.document_id for a in deletions[:10]],
            )
            deletions = []
        if self.options.dry_run:
            return
        others = [a for a in actions if a.decision is not Decision.DELETE]
        self._apply_all(report, others, listing)
        self._apply_all(report, deletions, listing)
        lap("apply")

    def _count(self, report: ReconcileReport, action: PlannedAction) -> bool:
        """Count the decision; True when the action needs work."""
        report.decided[action.decision.value] += 1
        report.reasons[action.reason] += 1
        if action.decision is Decision.UP_TO_DATE:
            return False
        if len(report.samples) < _SAMPLES:
            report.samples.append(
                f"{action.decision.value} ({action.reason}): {action.document_id} "
                f"index {_v(action.index_version)} source {_v(action.source_version)}"
            )
        return action.decision is not Decision.AHEAD  # reported, never undone

    def _apply_all(
        self,
        report: ReconcileReport,
        actions: Iterable[PlannedAction],
        listing: dict[str, SourceEntry],
    ) -> None:
        """Apply the actions; events go to ``Indexer.apply`` in batches."""
        pending: list[tuple[str, ChangeEvent]] = []
        for action in actions:
            if self.should_stop():
                self._flush(report, pending)
                raise RunInterrupted(
                    f"stop requested after {sum(report.applied.values())} actions; "
                    "the next run finishes the work"
                )
            try:
                prepared = self._prepare(action, listing.get(action.document_id))
            except _DOCUMENT_ERRORS as exc:
                self._fail(report, action.document_id, exc)
                continue
            if isinstance(prepared, str):
                report.applied[prepared] += 1
                continue
            pending.append((action.document_id, prepared))
            if len(pending) >= self.batch_size:
                self._flush(report, pending)
        self._flush(report, pending)

    def _flush(self, report: ReconcileReport, pending: list[tuple[str, ChangeEvent]]) -> None:
        if not pending:
            return
        applied = self.indexer.apply([event for _, event in pending])
        for (document_id, _), result in zip(pending, applied.results, strict=True):
            if isinstance(result, PoisonEvent):
                self._fail(report, document_id, result)
            else:
                report.applied[result.value] += 1
        pending.clear()

    @staticmethod
    def _fail(report: ReconcileReport, document_id: str, exc: Exception) -> None:
        if isinstance(exc, PoisonEvent) and exc.reason in CONTENT_REASONS:
            report.content_refused.append(f"{document_id}: {exc}")
            log.warning("reconcile: the source's content is refused", document_id=document_id,
                        error=str(exc))
            return
        report.failures.append(f"{document_id}: {type(exc).__name__}: {exc}")
        log.error("reconcile could not apply", document_id=document_id, error=str(exc))

    def _prepare(self, action: PlannedAction, entry: SourceEntry | None) -> ChangeEvent | str:
        """The change event to apply, or what was done instead (repair, skip)."""
        doc_id = action.document_id
        if action.decision is Decision.REINDEX:
            try:
                document = self.source.get_document(doc_id)
            except DocumentNotFoundError:
                return "vanished"  # deleted since the listing: the next run sees it
            return self._upsert(document)
        if action.decision is Decision.TOMBSTONE and entry is not None:
            return self._delete(doc_id, entry.version, entry.changed_at)
        if action.decision is Decision.DELETE:
            return self._prepare_delete(action, entry)
        if action.decision is Decision.REPAIR:
            return self._apply_repair(action)
        raise ValueError(f"no way to apply decision {action.decision!r} to {doc_id!r}")

    def _prepare_delete(
        self, action: PlannedAction, entry: SourceEntry | None
    ) -> ChangeEvent | str:
        doc_id = action.document_id
        state = self.store.get_state(doc_id)
        if state is None or state.deleted or state.version != action.index_version:
            return "changed_meanwhile"
        if entry is not None and entry.deleted:
            return self._delete(doc_id, entry.version, entry.changed_at)
        try:
            found = self.source.get_document(doc_id)
        except DocumentNotFoundError:
            return self._delete(doc_id, state.version + 1, datetime.now(UTC))
        raise SourceDataError(
            f"the listing left out {doc_id!r} but the source returns it at version "
            f"{found.version}: not deleted (the listing is incomplete)"
        )

    def _apply_repair(self, action: PlannedAction) -> ChangeEvent | str:
        doc_id = action.document_id
        state = self.store.get_state(doc_id)
        if state is None or state.version != action.index_version:
            return "changed_meanwhile"
        if state.deleted:
            remove_leftovers(self.store, state)
            return "repaired"
        try:
            document = self.source.get_document(doc_id)
        except DocumentNotFoundError:
            return "vanished"
        event = self._upsert(document)
        if document.version != state.version:
            return event  # the source moved on: an ordinary reindex
        rewrite(self.indexer, event, state)
        return "repaired"

    def _event_id(self) -> str:
        self._events += 1
        return f"reindex-{self._run_tag}-{self._events}"

    def _upsert(self, document: SourceDocument) -> ChangeEvent:
        return ChangeEvent(
            event_id=self._event_id(),
            document_id=document.document_id,
            action=Action.UPSERT,
            version=document.version,
            changed_at=document.changed_at,
            received_at=datetime.now(UTC),
            content_type=document.content_type,
            content=document.content,
            metadata=document.metadata,
            source=self.source.name,
        )

    def _delete(self, document_id: str, version: int, changed_at: datetime) -> ChangeEvent:
        return ChangeEvent(
            event_id=self._event_id(),
            document_id=document_id,
            action=Action.DELETE,
            version=version,
            changed_at=changed_at,
            received_at=datetime.now(UTC),
            source=self.source.name,
        )


def _v(version: int | None) -> str:
    return "-" if version is None else f"v{version}"
