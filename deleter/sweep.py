"""The sweep: find and delete leftover chunks across the whole index.

A chunk is a leftover when:

- ``older``: its version is below its document's current version;
- ``deleted-document``: its document is tombstoned at a version above the chunk's;
- ``above-current``: its version is above the document's state (a crash between
  the chunk write and the state write) and it is older than the grace period;
- ``unknown-document``: no state exists for its document and it is older than
  the grace period.

The grace period leaves alone chunks a worker may be writing right now: a
worker writes the chunks first and the state next.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from store.base import Store
from store.model import ChunkRef, DocumentState

# The one default of the grace period (settings, the monitor and the reindex reuse it).
DEFAULT_GRACE = timedelta(minutes=10)
LEFTOVER_REASONS = ("older", "deleted-document", "above-current", "unknown-document")


@dataclass
class SweepReport:
    examined: int = 0
    leftovers: Counter[str] = field(default_factory=Counter)
    deleted: int = 0
    kept_in_grace: int = 0
    dry_run: bool = False
    samples: list[str] = field(default_factory=list)

    @property
    def total_leftovers(self) -> int:
        return sum(self.leftovers.values())


def classify(
    ref: ChunkRef, state: DocumentState | None, now: datetime, grace: timedelta
) -> str | None:
    """The leftover reason of one chunk, ``"grace"`` when too young to judge, or None."""
    young = ref.indexed_at is not None and now - ref.indexed_at < grace
    if state is None:
        return "grace" if young else "unknown-document"
    if ref.version < state.version:
        return "deleted-document" if state.deleted else "older"
    if state.deleted or ref.version > state.version:
        # A tombstone at this version, or a version the state has not reached yet.
        if ref.version == state.version:
            return "deleted-document"
        return "grace" if young else "above-current"
    return None


def sweep(
    store: Store,
    *,
    grace: timedelta = DEFAULT_GRACE,
    dry_run: bool = False,
    now: datetime | None = None,
    batch_size: int = 500,
) -> SweepReport:
    now = now or datetime.now(UTC)
    store.refresh()
    states = {s.document_id: s for s in store.iter_states()}
    report = SweepReport(dry_run=dry_run)
    pending: list[str] = []
    for ref in store.iter_chunks():
        report.examined += 1
        reason = classify(ref, states.get(ref.document_id), now, grace)
        if reason is None:
            continue
        if reason == "grace":
            report.kept_in_grace += 1
            continue
        report.leftovers[reason] += 1
        if len(report.samples) < 20:
            report.samples.append(f"{reason}: {ref.chunk_id}")
        pending.append(ref.chunk_id)
        if not dry_run and len(pending) >= batch_size:
            report.deleted += store.delete_chunks(pending)
            pending = []
    if not dry_run and pending:
        report.deleted += store.delete_chunks(pending)
    return report
