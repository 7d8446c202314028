"""One freshness cycle: join the source listing with the index's states and chunks.

``measure()`` streams the source listing against a dict of the index's states
(one entry per document, the chunk id tuples dropped), then streams the chunks
to count leftovers, so memory grows with the number of documents, not chunks.
The result, a ``FreshnessSnapshot``, keeps lag *start times*: the collector
turns them into seconds at scrape time, so lag keeps growing between cycles and
while the source cannot be listed.

A leftover is what ``deleter.sweep.classify`` calls one (the single definition):
a chunk of a version below its document's state, of a deleted document, or,
past the sweep's grace period, above the state or of an unknown document. Its
age counts from when it became a leftover: the state's ``indexed_at`` (the
newer version or the tombstone was recorded then) or, for the last two kinds,
the chunk's own ``indexed_at``.

Which documents are behind, missing, deleted at the source, another source's or
refused is the comparison's verdict (``foundation.comparison.compare``, the one
``status``, the passage freshness and the reconcile read too); the lag arithmetic
and its memory across cycles are ``metrics.lag`` and ``LagMemory``.

One owner per document: with ``source_name``, a document whose state names another
source (``foundation.comparison.owned_elsewhere``) is not compared with this listing at all:
never missing, behind or deleted at this source, no lag; its chunks still count for
leftovers, which are the index's own business. ``other_owner_documents`` counts them.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from deleter.sweep import classify
from foundation.comparison import Verdict, compare
from metrics.lag import DocumentLag, LagStatus, verdict_lag
from sources.base import SourceEntry
from sources.unlisted import with_unlisted
from store.model import ChunkRef, DocumentState


@dataclass
class LagMemory:
    """What the monitor remembers across cycles (see ``metrics.lag``).

    ``behind``: document id -> (indexed version, earliest newer change seen);
    ``absent``: document id -> when first seen missing from the source listing.
    """

    behind: dict[str, tuple[int, datetime]] = field(default_factory=dict)
    absent: dict[str, datetime] = field(default_factory=dict)


@dataclass(frozen=True)
class FreshnessSnapshot:
    taken_at: datetime
    source_documents: int  # live documents at the source (tombstones excluded)
    indexed_documents: int  # live documents in the index (tombstones excluded)
    behind_by_status: dict[str, int]
    behind_since: list[datetime]  # start of each behind document's lag, oldest first
    most_lagging: list[DocumentLag]  # the ``max_series`` oldest, oldest first
    current_documents: list[str]  # current documents exported at 0: all, or to fill the cap
    future_dated: int  # source changes dated after ``taken_at``
    leftover_versions: int  # leftover chunks
    leftover_documents: int  # documents with at least one leftover chunk
    leftover_since: datetime | None  # when the oldest leftover became one
    chunks_examined: int
    known_documents: int  # documents live at the source or in the index (p95's population)
    # documents the source lists but cannot read: (id, reason kind), sorted; no lag figure
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    other_owner_documents: int = 0  # owned by another source: not compared with this one

    def unreadable_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _, reason in self.unreadable:
            counts[reason] = counts.get(reason, 0) + 1
        return counts

    @property
    def behind(self) -> int:
        return len(self.behind_since)

    def max_lag_seconds(self, now: datetime) -> float:
        return _seconds(now, self.behind_since[0]) if self.behind_since else 0.0

    def lag_quantile_seconds(self, q: float, now: datetime, total: int | None = None) -> float:
        """The q-quantile of lag over every known document (current ones count as 0).

        Nearest-rank: with n documents, the ceil(q*n)-th smallest lag.
        """
        n = total if total is not None else self.known_documents
        if n <= 0 or not self.behind_since:
            return 0.0
        rank = max(1, math.ceil(q * n))
        from_top = n - rank  # how many lags are larger than the answer
        if from_top >= len(self.behind_since):
            return 0.0
        return _seconds(now, self.behind_since[from_top])


def _seconds(now: datetime, since: datetime) -> float:
    return max(0.0, (now - since).total_seconds())


def _compact(state: DocumentState) -> DocumentState:
    """The state without its chunk id lists (most of its memory; the monitor needs none)."""
    if state.chunk_ids or state.superseded_chunk_ids:
        # direct construction: dataclasses.replace() costs ~7x more per call
        return DocumentState(state.document_id, state.version, state.changed_at,
                             state.indexed_at, deleted=state.deleted, owner=state.owner)
    return state


def measure(
    listing: Iterable[SourceEntry],
    states: Iterable[DocumentState],
    chunks: Iterable[ChunkRef],
    *,
    now: datetime,
    memory: LagMemory,
    max_series: int | None,
    grace: timedelta,
    source_name: str | None = None,
    refused: Collection[tuple[str, int]] = (),
) -> FreshnessSnapshot:
    """One cycle. Reads ``states`` first, then ``listing``, then ``chunks``.

    ``memory`` is replaced only when the whole cycle succeeds: an exception from
    any of the three streams leaves it as it was. ``source_name``: the listing's
    source; documents other sources own are left out of the comparison (None: none is).
    ``refused``: (document id, version) the worker refused for its content (a dead
    letter): such a source version the index lacks waits for an edit, never a lag.
    """
    indexed = {s.document_id: _compact(s) for s in states}
    lags: list[DocumentLag] = []
    by_status: dict[str, int] = {}
    source_live = 0
    index_live_only = 0
    future = 0
    elsewhere = 0
    behind, absent = memory.behind, memory.absent
    new_behind: dict[str, tuple[int, datetime]] = {}
    new_absent: dict[str, datetime] = {}
    current: list[str] = []
    unreadable: list[tuple[str, str]] = []
    listing = with_unlisted(listing, indexed)  # a folder that cannot be listed: kept
    for found in compare(listing, indexed, source=source_name, refused=refused):
        document_id, entry, state = found.document_id, found.entry, found.state
        if entry is not None and not entry.deleted:
            source_live += 1
        if found.verdict is Verdict.OTHER_OWNER:
            elsewhere += 1
            continue  # another source's document: not compared with this one
        if entry is None:  # not listed: live only in the index, or nothing to say
            if found.verdict is not Verdict.GONE_FROM_SOURCE:
                continue
            index_live_only += 1
            since = absent.get(document_id, now)
            new_absent[document_id] = since
            lag = verdict_lag(document_id, found.verdict, None, absent_since=since)
            if lag is not None and lag.since is not None:
                lags.append(lag)
            continue
        if entry.unreadable is not None:
            unreadable.append((document_id, entry.unreadable.kind.value))
            continue  # no version to compare: its own status, never a lag
        if entry.changed_at > now:
            future += 1
        if found.verdict is Verdict.REFUSED:
            continue  # refused for its content: fixed at the source, not lagging
        if entry.deleted and state is not None and not state.deleted:
            index_live_only += 1  # live only in the index
        version = state.version if state is not None else 0
        kept = behind.get(document_id)
        remembered = kept[1] if kept is not None and kept[0] == version else None
        lag = verdict_lag(document_id, found.verdict, entry, remembered=remembered)
        if lag is not None and lag.since is not None:
            new_behind[document_id] = (version, lag.since)
            lags.append(lag)
        elif (max_series is None or len(current) < max_series) and not (
            entry.deleted and (state is None or state.deleted)
        ):
            current.append(document_id)
    for lag in lags:
        by_status[lag.status.value] = by_status.get(lag.status.value, 0) + 1
    timed = [(lag.since, lag) for lag in lags if lag.since is not None]
    starts = sorted(since for since, _ in timed)
    if max_series is None:
        top = [lag for _, lag in sorted(timed, key=_first)]
    else:
        top = [lag for _, lag in heapq.nsmallest(max_series, timed, key=_first)]
        # fewer lagging documents than the cap: the rest of the N are current ones, at 0
        current = current[: max_series - len(top)]

    leftover_chunks = 0
    leftover_docs: set[str] = set()
    leftover_since: datetime | None = None
    examined = 0
    for ref in chunks:
        examined += 1
        state = indexed.get(ref.document_id)
        if state is not None and ref.version == state.version and not state.deleted:
            continue  # the current version: the common case, decided without classify()
        reason = classify(ref, state, now, grace)
        if reason is None or reason == "grace":
            continue
        leftover_chunks += 1
        leftover_docs.add(ref.document_id)
        if reason in ("older", "deleted-document") and state is not None:
            became = state.indexed_at
        else:
            became = ref.indexed_at or now
        if leftover_since is None or became < leftover_since:
            leftover_since = became

    index_live = sum(1 for s in indexed.values() if not s.deleted)
    memory.behind, memory.absent = new_behind, new_absent
    return FreshnessSnapshot(
        taken_at=now,
        source_documents=source_live,
        indexed_documents=index_live,
        behind_by_status={s.value: by_status.get(s.value, 0) for s in LagStatus
                          if s not in (LagStatus.CURRENT, LagStatus.UNREADABLE)},
        behind_since=starts,
        most_lagging=top,
        current_documents=current,
        future_dated=future,
        leftover_versions=leftover_chunks,
        leftover_documents=len(leftover_docs),
        leftover_since=leftover_since,
        chunks_examined=examined,
        known_documents=source_live + index_live_only,
        unreadable=sorted(unreadable),
        other_owner_documents=elsewhere,
    )


def _first(pair: tuple[datetime, DocumentLag]) -> datetime:
    return pair[0]
