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
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from deleter.sweep import classify
from foundation.comparison import Verdict, compare, verdict
from metrics.lag import DocumentLag, LagStatus, verdict_lag
from sources.base import SourceEntry, UnreadableKind
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
    """One full cycle. Reads ``states`` first, then ``listing``, then ``chunks``.

    ``memory`` is replaced only when the whole cycle succeeds: an exception from
    any of the three streams leaves it as it was. ``source_name``: the listing's
    source; documents other sources own are left out of the comparison (None: none is).
    ``refused``: (document id, version) the worker refused for its content (a dead
    letter): such a source version the index lacks waits for an edit, never a lag.
    """
    view = FreshnessView(max_series=max_series, grace=grace, source_name=source_name,
                         memory=memory)
    snapshot = view.rebuild(listing, states, chunks, now=now, refused=refused)
    memory.behind, memory.absent = view.behind, view.absent
    return snapshot


# What one document adds to a snapshot: bits of FreshnessView.flags.
_SOURCE_LIVE = 1  # live at the source (a tombstone is not)
_INDEX_LIVE_ONLY = 2  # live only in the index (p95's population beside the source's)
_ELSEWHERE = 4  # another source's document
_CURRENT = 8  # current: may be exported at 0 to fill the series cap
_FUTURE = 16  # the source's changed_at is after the cycle's clock


@dataclass(frozen=True, slots=True)
class _Judgement:
    flags: int = 0
    lag: DocumentLag | None = None
    behind: tuple[int, datetime] | None = None  # LagMemory.behind's value
    absent: datetime | None = None  # LagMemory.absent's value
    unreadable: str | None = None  # the reason's kind


_NOTHING = _Judgement()


class FreshnessView:
    """The monitor's view of every document, kept between cycles.

    ``rebuild`` reads the whole listing, every state and every chunk (a full cycle,
    what ``measure`` is); ``update`` then applies only what changed: the listing's
    changed, new and removed entries, the states that changed, the chunks of the
    documents that may hold a leftover. Each document's part of the snapshot (its
    ``flags``, lag, memory, unreadable reason) is kept, so a document nothing
    touched is not judged again; the snapshot itself is summed from those parts.

    Chunks: only the *odd* ones are kept, those not of their document's current
    live version (every leftover, and those still in the grace period). They are
    classified again at each snapshot, since the grace period runs with the clock.
    """

    def __init__(self, *, max_series: int | None, grace: timedelta,
                 source_name: str | None = None, memory: LagMemory | None = None) -> None:
        self.max_series = max_series
        self.grace = grace
        self.source_name = source_name
        self.entries: dict[str, SourceEntry] = {}  # the listing, in its order
        self.states: dict[str, DocumentState] = {}  # compact states
        self.flags: dict[str, int] = {}
        self.lags: dict[str, DocumentLag] = {}  # lagging documents only
        self.behind: dict[str, tuple[int, datetime]] = dict(memory.behind) if memory else {}
        self.absent: dict[str, datetime] = dict(memory.absent) if memory else {}
        self.unreadable: dict[str, str] = {}
        self.future: set[str] = set()
        self.odd_chunks: dict[str, list[ChunkRef]] = {}
        self.chunk_count = 0
        self.refused: frozenset[tuple[str, int]] = frozenset()
        self.now: datetime | None = None  # the clock of the last cycle
        self.built = False
        self.unlisted = False  # the listing names a folder that cannot be listed

    # -- full ---------------------------------------------------------------
    def rebuild(
        self,
        listing: Iterable[SourceEntry],
        states: Iterable[DocumentState],
        chunks: Iterable[ChunkRef],
        *,
        now: datetime,
        refused: Collection[tuple[str, int]] = (),
    ) -> FreshnessSnapshot:
        """A full cycle; the view is replaced only when all three streams were read."""
        indexed = {s.document_id: _compact(s) for s in states}
        entries: dict[str, SourceEntry] = {}
        for entry in with_unlisted(listing, indexed):  # a folder that cannot be listed: kept
            entries[entry.document_id] = entry
        refused_set = frozenset(refused)
        judged = {
            found.document_id: self._judge(found.document_id, found.verdict, found.entry,
                                           found.state, now)
            for found in compare(entries.values(), indexed, source=self.source_name,
                                 refused=refused_set)
        }
        odd: dict[str, list[ChunkRef]] = {}
        count = 0
        for ref in chunks:
            count += 1
            if _is_odd(ref, indexed.get(ref.document_id)):
                odd.setdefault(ref.document_id, []).append(ref)
        self.entries, self.states, self.odd_chunks = entries, indexed, odd
        self.chunk_count, self.refused = count, refused_set
        self.flags, self.lags, self.behind, self.absent = {}, {}, {}, {}
        self.unreadable, self.future = {}, set()
        for document_id, judgement in judged.items():
            self._keep(document_id, judgement)
        self.now, self.built = now, True
        self.unlisted = any(_unlisted_marker(e) for e in entries.values()
                            if e.unreadable is not None)
        return self.snapshot(now)

    # -- incremental --------------------------------------------------------
    def changed_states(self, states: Iterable[DocumentState]) -> dict[str, DocumentState]:
        """Of ``states`` (read again: those written since a watermark, or all), the ones
        that differ from the view's, compacted."""
        changed: dict[str, DocumentState] = {}
        held = self.states
        for state in states:
            compact = _compact(state)
            if held.get(state.document_id) != compact:
                changed[state.document_id] = compact
        return changed

    def update(
        self,
        entries: dict[str, SourceEntry],
        changed_states: dict[str, DocumentState],
        *,
        removed_states: Collection[str] = (),
        refreshed: Collection[str] | None,
        refreshed_chunks: Iterable[ChunkRef],
        chunk_count: int | None,
        now: datetime,
        refused: Collection[tuple[str, int]] = (),
    ) -> FreshnessSnapshot | None:
        """An incremental cycle; None (the view unchanged) when it needs a full one.

        ``entries``: the whole listing, by id, in its order. ``changed_states``: from
        ``changed_states``; ``removed_states``: ids whose state is gone (known only to a
        caller that read every state). ``refreshed``: documents whose chunks were read
        again, all of them (``refreshed_chunks``; it must cover every document with a
        changed state, with a chunk written since the watermark, and ``odd_chunks``);
        None: ``refreshed_chunks`` is every chunk of the index. ``chunk_count``: every
        chunk in the index (None: as many as ``refreshed_chunks``).
        """
        if not self.built or self.unlisted or (self.now is not None and now < self.now):
            # never built; a folder that cannot be listed (with_unlisted reads every id);
            # a clock that went back (future-dated documents would come back)
            return None
        held = self.entries
        dirty: set[str] = set(changed_states)
        dirty.update(removed_states)
        for document_id, entry in entries.items():
            old = held.get(document_id)
            if old is not entry and old != entry:
                if _unlisted_marker(entry):
                    return None  # a folder that cannot be listed: with_unlisted, in full
                dirty.add(document_id)
        dirty.update(held.keys() - entries.keys())  # gone from the listing
        refused_set = frozenset(refused)
        if refused_set != self.refused:
            dirty.update(document_id for document_id, _ in refused_set ^ self.refused)
        dirty.update(self.future)  # a future-dated change may have come of age
        states = self.states
        odd: dict[str, list[ChunkRef]] = {}
        read = 0
        for ref in refreshed_chunks:
            read += 1
            state = changed_states.get(ref.document_id, states.get(ref.document_id))
            if ref.document_id in removed_states:
                state = None
            if _is_odd(ref, state):
                odd.setdefault(ref.document_id, []).append(ref)
        # everything read; from here on nothing fails, the view changes as a whole
        for document_id in removed_states:
            states.pop(document_id, None)
        states.update(changed_states)
        self.entries = entries
        judged = []
        for document_id in dirty:
            listed, state = entries.get(document_id), states.get(document_id)
            if listed is None and state is None:
                judged.append((document_id, _NOTHING))
                continue
            found = verdict(document_id, listed, state, source=self.source_name,
                            refused=refused_set)
            judged.append((document_id, self._judge(document_id, found, listed, state, now)))
        for document_id, judgement in judged:
            self._forget(document_id)
            self._keep(document_id, judgement)
        if refreshed is None:
            self.odd_chunks = odd
        else:
            for document_id in refreshed:
                self.odd_chunks.pop(document_id, None)
            self.odd_chunks.update(odd)
        self.chunk_count = read if chunk_count is None else chunk_count
        self.refused, self.now = refused_set, now
        return self.snapshot(now)

    # -- one document -------------------------------------------------------
    def _judge(self, document_id: str, found: Verdict, entry: SourceEntry | None,
               state: DocumentState | None, now: datetime) -> _Judgement:
        """What one document adds to the snapshot (``measure``'s rules, one document)."""
        flags = _SOURCE_LIVE if entry is not None and not entry.deleted else 0
        if found is Verdict.OTHER_OWNER:
            return _Judgement(flags | _ELSEWHERE)  # not compared with this source
        if entry is None:  # not listed: live only in the index, or nothing to say
            if found is not Verdict.GONE_FROM_SOURCE:
                return _Judgement(flags)
            since = self.absent.get(document_id, now)
            lag = verdict_lag(document_id, found, None, absent_since=since)
            if lag is None or lag.since is None:
                lag = None
            return _Judgement(flags | _INDEX_LIVE_ONLY, lag, absent=since)
        if entry.unreadable is not None:  # no version to compare: its own status, no lag
            return _Judgement(flags, unreadable=entry.unreadable.kind.value)
        if entry.changed_at > now:
            flags |= _FUTURE
        if found is Verdict.REFUSED:
            return _Judgement(flags)  # refused for its content: fixed at the source
        if entry.deleted and state is not None and not state.deleted:
            flags |= _INDEX_LIVE_ONLY  # live only in the index
        version = state.version if state is not None else 0
        kept = self.behind.get(document_id)
        remembered = kept[1] if kept is not None and kept[0] == version else None
        lag = verdict_lag(document_id, found, entry, remembered=remembered)
        if lag is not None and lag.since is not None:
            return _Judgement(flags, lag, behind=(version, lag.since))
        if not (entry.deleted and (state is None or state.deleted)):
            flags |= _CURRENT
        return _Judgement(flags)

    def _forget(self, document_id: str) -> None:
        self.flags.pop(document_id, None)
        self.lags.pop(document_id, None)
        self.behind.pop(document_id, None)
        self.absent.pop(document_id, None)
        self.unreadable.pop(document_id, None)
        self.future.discard(document_id)

    def _keep(self, document_id: str, judgement: _Judgement) -> None:
        if judgement.flags:
            self.flags[document_id] = judgement.flags
            if judgement.flags & _FUTURE:
                self.future.add(document_id)
        if judgement.lag is not None:
            self.lags[document_id] = judgement.lag
        if judgement.behind is not None:
            self.behind[document_id] = judgement.behind
        if judgement.absent is not None:
            self.absent[document_id] = judgement.absent
        if judgement.unreadable is not None:
            self.unreadable[document_id] = judgement.unreadable

    # -- the snapshot -------------------------------------------------------
    def snapshot(self, now: datetime) -> FreshnessSnapshot:
        """The snapshot of the view as it stands (sums over the kept parts)."""
        counts = Counter(self.flags.values())

        def having(bit: int) -> int:
            return sum(n for flags, n in counts.items() if flags & bit)

        source_live = having(_SOURCE_LIVE)
        by_status: dict[str, int] = {}
        for lag in self.lags.values():
            by_status[lag.status.value] = by_status.get(lag.status.value, 0) + 1
        timed = [(lag.since, lag.document_id, lag) for lag in self.lags.values()
                 if lag.since is not None]
        starts = sorted(since for since, _, _ in timed)
        max_series = self.max_series
        if max_series is None:
            top = [lag for _, _, lag in sorted(timed, key=_order)]
            room = None
        else:
            top = [lag for _, _, lag in heapq.nsmallest(max_series, timed, key=_order)]
            # fewer lagging documents than the cap: the rest of the N are current ones, at 0
            room = max_series - len(top)
        current: list[str] = []
        if room is None or room > 0:
            flags = self.flags
            for document_id in self.entries:
                if flags.get(document_id, 0) & _CURRENT:
                    current.append(document_id)
                    if room is not None and len(current) >= room:
                        break

        leftover_chunks = 0
        leftover_docs: set[str] = set()
        leftover_since: datetime | None = None
        for document_id, refs in self.odd_chunks.items():
            state = self.states.get(document_id)
            for ref in refs:
                reason = classify(ref, state, now, self.grace)
                if reason is None or reason == "grace":
                    continue
                leftover_chunks += 1
                leftover_docs.add(document_id)
                if reason in ("older", "deleted-document") and state is not None:
                    became = state.indexed_at
                else:
                    became = ref.indexed_at or now
                if leftover_since is None or became < leftover_since:
                    leftover_since = became

        return FreshnessSnapshot(
            taken_at=now,
            source_documents=source_live,
            indexed_documents=sum(1 for s in self.states.values() if not s.deleted),
            behind_by_status={s.value: by_status.get(s.value, 0) for s in LagStatus
                              if s not in (LagStatus.CURRENT, LagStatus.UNREADABLE)},
            behind_since=starts,
            most_lagging=top,
            current_documents=current,
            future_dated=having(_FUTURE),
            leftover_versions=leftover_chunks,
            leftover_documents=len(leftover_docs),
            leftover_since=leftover_since,
            chunks_examined=self.chunk_count,
            known_documents=source_live + having(_INDEX_LIVE_ONLY),
            unreadable=sorted(self.unreadable.items()),
            other_owner_documents=having(_ELSEWHERE),
        )

    def memory(self) -> LagMemory:
        return LagMemory(dict(self.behind), dict(self.absent))


def _is_odd(ref: ChunkRef, state: DocumentState | None) -> bool:
    """Not a chunk of its document's current live version: a leftover, or may become one."""
    return state is None or ref.version != state.version or state.deleted


def _unlisted_marker(entry: SourceEntry) -> bool:
    return (entry.unreadable is not None and entry.unreadable.kind is UnreadableKind.UNLISTABLE
            and entry.document_id.endswith("/"))


def _order(item: tuple[datetime, str, DocumentLag]) -> tuple[datetime, str]:
    """Oldest first; equal start times by document id (the same order however read)."""
    return item[0], item[1]
