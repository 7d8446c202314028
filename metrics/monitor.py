"""The freshness monitor: every interval, list the source and scan the index.

Built on the ``store.base.Store`` protocol (Elasticsearch, in-memory, SQLite
alike) and the ``sources.base.Source`` protocol. A cycle that fails keeps the
previous snapshot (its lags keep growing at scrape time) and is counted by
where it failed: a source that cannot be listed shows as
``source_listing_consecutive_failures`` > 0, never as "no lag".

A cycle costs what changed (docs/monitoring.md, "Cycles that read what changed"):
the first cycle, and one every ``full_every``, reads everything (``FreshnessView.rebuild``);
the others read the source's listing, the states and chunks written since a
watermark (``store.base.ChangeReads``; the cycle's start less ``watermark_margin``),
the chunks of the documents that may hold a leftover and the chunk count, and judge
only the documents that changed (``FreshnessView.update``). A store without
``ChangeReads`` is read whole every cycle, the judging still incremental. The
figures are those a full cycle would give; the full cycles catch what no watermark
shows (a state removed from the index, a write stamped further back than the margin).

At start-up beside a pipeline that is still building the index (the embedded
run's first indexing), a cycle would compare a full source with an empty
index and report every document missing, with a lag of the files' age: a
false alarm. ``run_forever(start_when=...)`` waits for that event (or at most
``start_within_s``) before the first cycle; until then no snapshot metric is
exported: "not measured yet", never a made-up lag.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import structlog

from deleter.sweep import DEFAULT_GRACE
from metrics.freshness import FreshnessSnapshot, FreshnessView, LagMemory
from sources.base import Source, SourceEntry
from sources.errors import SourceError
from store.base import ChangeReads, Store
from store.errors import StoreError
from store.model import ChunkRef, DocumentState

log = structlog.get_logger(__name__)


class _SourceFailed(Exception):
    pass


@dataclass
class MonitorStatus:
    """Counters the collector reads; plain ints and floats, replaced whole."""

    source_failures: Counter[str] = field(default_factory=Counter)
    source_consecutive_failures: int = 0
    source_last_success: float = 0.0
    index_failures: int = 0
    index_consecutive_failures: int = 0
    cycles: Counter[str] = field(default_factory=Counter)
    last_success: float = 0.0
    last_cycle_seconds: float = 0.0
    last_error: str | None = None
    last_cycle_kind: str = ""  # "full" or "incremental"


# A full cycle at least this often: what no watermark shows (a state removed from
# the index, a write stamped further back than the margin) is caught within it.
FULL_EVERY = timedelta(hours=1)
WATERMARK_MARGIN = timedelta(minutes=2)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class FreshnessMonitor:
    def __init__(
        self,
        source: Source,
        store: Store,
        *,
        max_series: int | None = 100,
        grace: timedelta = DEFAULT_GRACE,
        clock: Callable[[], datetime] = _utcnow,
        refused: Callable[[], Collection[tuple[str, int]]] | None = None,
        full_every: timedelta | None = timedelta(0),
        watermark_margin: timedelta = WATERMARK_MARGIN,
    ) -> None:
        """``full_every``: a full cycle at least this often (timedelta(0), the default
        here: every cycle; None: only the first; the processes pass ``FULL_EVERY``).
        ``watermark_margin``: how far before the last cycle's start an incremental cycle
        reads the writes again (a writer's clock behind ours, the index's refresh
        interval, a write stamped a moment before it landed)."""
        self.source = source
        self.store = store
        self.max_series = max_series
        self.grace = grace
        self.clock = clock
        self.refused = refused  # each cycle: the versions refused for their content
        self.full_every = full_every
        self.watermark_margin = watermark_margin
        self.view = FreshnessView(max_series=max_series, grace=grace, source_name=source.name)
        self._last_full: datetime | None = None  # the clock of the last full cycle
        self._read_from: datetime | None = None  # the clock when the last good cycle began
        self.snapshot: FreshnessSnapshot | None = None
        self.status = MonitorStatus()
        self._stop = threading.Event()

    def _listing(self) -> Iterator[SourceEntry]:
        try:
            yield from self.source.list_documents()
        except SourceError as exc:
            raise _SourceFailed(type(exc).__name__) from exc
        self.status.source_consecutive_failures = 0
        self.status.source_last_success = time.time()

    @property
    def memory(self) -> LagMemory:
        """What the lag remembers across cycles (a copy)."""
        return self.view.memory()

    def _full_due(self, now: datetime) -> bool:
        if self._last_full is None or self._read_from is None:
            return True
        return self.full_every is not None and now - self._last_full >= self.full_every

    def _full(self, now: datetime, refused: Collection[tuple[str, int]]) -> FreshnessSnapshot:
        # No store.refresh(): the monitor only reads (an API key without the
        # maintenance privilege is enough); the index's own refresh interval
        # (1 s) is far below any lag worth reporting.
        snapshot = self.view.rebuild(self._listing(), self.store.iter_states(),
                                     self.store.iter_chunks(), now=now, refused=refused)
        self._last_full = now
        self.status.last_cycle_kind = "full"
        return snapshot

    def _incremental(self, now: datetime,
                     refused: Collection[tuple[str, int]]) -> FreshnessSnapshot | None:
        """Read what changed since the last good cycle began (less the margin)."""
        view, store = self.view, self.store
        assert self._read_from is not None
        since = self._read_from - self.watermark_margin
        removed: Collection[str] = ()
        if isinstance(store, ChangeReads):
            changed = view.changed_states(store.iter_states_since(since))
        else:  # every state, to tell the changed ones (and the removed ones)
            every: dict[str, DocumentState] = {s.document_id: s for s in store.iter_states()}
            changed = view.changed_states(every.values())
            removed = view.states.keys() - every.keys()
        entries: dict[str, SourceEntry] = {}
        for entry in self._listing():
            entries[entry.document_id] = entry
        refreshed: set[str] | None
        chunks: Iterable[ChunkRef]
        count: int | None
        if isinstance(store, ChangeReads):
            refreshed = {ref.document_id for ref in store.iter_chunks_since(since)}
            refreshed.update(changed, removed, view.odd_chunks)
            chunks = list(store.iter_chunks_of(refreshed)) if refreshed else []
            count = store.count_chunks()
        else:
            refreshed, chunks, count = None, store.iter_chunks(), None
        snapshot = view.update(entries, changed, removed_states=removed, refreshed=refreshed,
                               refreshed_chunks=chunks, chunk_count=count, now=now,
                               refused=refused)
        if snapshot is not None:
            self.status.last_cycle_kind = "incremental"
        return snapshot

    def run_cycle(self) -> FreshnessSnapshot | None:
        """One cycle; returns the new snapshot, or None when the cycle failed."""
        started = time.monotonic()
        status = self.status
        self.view.max_series, self.view.grace = self.max_series, self.grace
        try:
            now = self.clock()
            refused = self.refused() if self.refused is not None else ()
            snapshot = None if self._full_due(now) else self._incremental(now, refused)
            if snapshot is None:  # due, or the view asked for one
                snapshot = self._full(now, refused)
            self._read_from = now
        except _SourceFailed as exc:
            status.source_failures[str(exc)] += 1
            status.source_consecutive_failures += 1
            status.cycles["source_failed"] += 1
            status.last_error = f"source listing failed: {exc.__cause__}"
            log.warning("source listing failed", source=self.source.name,
                        error=str(exc.__cause__), in_a_row=status.source_consecutive_failures)
            return None
        except StoreError as exc:
            status.index_failures += 1
            status.index_consecutive_failures += 1
            status.cycles["index_failed"] += 1
            status.last_error = f"index scan failed: {exc}"
            log.warning("index scan failed", error=str(exc),
                        in_a_row=status.index_consecutive_failures)
            return None
        finally:
            status.last_cycle_seconds = time.monotonic() - started
        self.snapshot = snapshot
        status.index_consecutive_failures = 0
        status.last_success = time.time()
        status.cycles["ok"] += 1
        status.last_error = None
        log.info("freshness cycle", kind=status.last_cycle_kind, behind=snapshot.behind,
                 max_lag_s=round(snapshot.max_lag_seconds(snapshot.taken_at), 1),
                 leftovers=snapshot.leftover_versions,
                 seconds=round(status.last_cycle_seconds, 3))
        return snapshot

    def run_forever(
        self,
        interval_seconds: float,
        *,
        start_when: threading.Event | None = None,
        start_within_s: float | None = None,
    ) -> None:
        """Cycle every ``interval_seconds`` (measured start to start) until ``stop()``.

        ``start_when``: the first cycle waits until it is set (the first indexing
        is done), or ``start_within_s`` passed (it is then measured as it is: a
        first indexing that never ends is a real lag), or ``stop()``.
        """
        if start_when is not None and not start_when.is_set():
            log.info("freshness monitor waits for the first indexing", within_s=start_within_s)
            deadline = None if start_within_s is None else time.monotonic() + start_within_s
            while not start_when.wait(0.1):
                if self._stop.is_set():
                    return
                if deadline is not None and time.monotonic() >= deadline:
                    log.warning("first indexing not done; measuring anyway",
                                waited_s=start_within_s)
                    break
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.run_cycle()
            except Exception:  # a bug must not stop the monitor silently: count, go on
                self.status.cycles["error"] += 1
                log.exception("freshness cycle crashed")
            self._stop.wait(max(0.0, interval_seconds - (time.monotonic() - started)))

    def stop(self) -> None:
        self._stop.set()
