"""The values reconcile works with: what the index holds, the decisions, the report."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum


class Decision(StrEnum):
    UP_TO_DATE = "up_to_date"
    REINDEX = "reindex"  # behind, missing, or re-created at the source
    DELETE = "delete"  # live in the index, gone (or tombstoned) at the source
    REPAIR = "repair"  # the chunks present disagree with the state
    TOMBSTONE = "tombstone"  # a source tombstone the index never recorded
    AHEAD = "ahead"  # the index holds a newer version than the source lists: left alone


class Outcome(StrEnum):
    SUCCESS = "success"
    FAILED = "failed"
    REFUSED = "refused"  # deletions above the cap, not confirmed


@dataclass(frozen=True, slots=True)
class IndexedDocument:
    """One document as the index holds it: its state and the chunks actually present."""

    version: int
    deleted: bool
    expected_chunks: int  # chunk ids the state lists
    current_chunks: int = 0  # chunks present at the state's version
    older_chunks: int = 0  # chunks present below the state's version (leftovers)
    owner: str | None = None  # the source that owns it (DocumentState.owner); None: unowned

    @property
    def chunks_agree(self) -> bool:
        if self.deleted:
            return self.current_chunks == 0 and self.older_chunks == 0
        return self.current_chunks == self.expected_chunks and self.older_chunks == 0


@dataclass(frozen=True, slots=True)
class PlannedAction:
    document_id: str
    decision: Decision
    reason: str  # behind, missing, recreated, gone_from_source, tombstoned_at_source, ...
    source_version: int | None  # None: not listed by the source
    index_version: int | None  # None: the index has no state


@dataclass
class ReconcileReport:
    """What one reconcile decided and did. ``decided`` counts every document."""

    dry_run: bool = False
    source_documents: int = 0  # entries listed (tombstones included)
    indexed_documents: int = 0  # live documents in the index before the run
    decided: Counter[str] = field(default_factory=Counter)  # by Decision
    reasons: Counter[str] = field(default_factory=Counter)  # by reason
    applied: Counter[str] = field(default_factory=Counter)  # by processor/repair outcome
    failures: list[str] = field(default_factory=list)  # one line per failed document
    # One line per document whose content the indexer refuses (bad front matter, over a
    # limit): the source must be fixed; the reconcile itself did not fail.
    content_refused: list[str] = field(default_factory=list)
    deletions_allowed: int = 0
    refused: bool = False
    error: str | None = None  # why the run failed as a whole
    samples: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # per phase, for the log

    @property
    def outcome(self) -> Outcome:
        if self.error is not None or self.failures:
            return Outcome.FAILED
        if self.refused:
            return Outcome.REFUSED
        return Outcome.SUCCESS

    def counts(self) -> dict[str, int]:
        """Flat counts for the run record and the metrics."""
        out = {f"decided_{k}": v for k, v in sorted(self.decided.items())}
        out.update({f"applied_{k}": v for k, v in sorted(self.applied.items())})
        out["source_documents"] = self.source_documents
        out["indexed_documents"] = self.indexed_documents
        out["failures"] = len(self.failures)
        out["content_refused"] = len(self.content_refused)
        return out
