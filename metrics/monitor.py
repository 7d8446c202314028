"""The freshness monitor: every interval, list the source and scan the index.

Built on the ``store.base.Store`` protocol (Elasticsearch, in-memory, SQLite
alike) and the ``sources.base.Source`` protocol. A cycle that fails keeps the
previous snapshot (its lags keep growing at scrape time) and is counted by
where it failed: a source that cannot be listed shows as
``source_listing_consecutive_failures`` > 0, never as "no lag".

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
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import structlog

from deleter.sweep import DEFAULT_GRACE
from metrics.freshness import FreshnessSnapshot, LagMemory, measure
from sources.base import Source, SourceEntry
from sources.errors import SourceError
from store.base import Store
from store.errors import StoreError

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
    ) -> None:
        self.source = source
        self.store = store
        self.max_series = max_series
        self.grace = grace
        self.clock = clock
        self.refused = refused  # each cycle: the versions refused for their content
        self.memory = LagMemory()
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

    def run_cycle(self) -> FreshnessSnapshot | None:
        """One cycle; returns the new snapshot, or None when the cycle failed."""
        started = time.monotonic()
        status = self.status
        try:
            # No store.refresh(): the monitor only reads (an API key without the
            # maintenance privilege is enough); the index's own refresh interval
            # (1 s) is far below any lag worth reporting.
            snapshot = measure(
                self._listing(),
                self.store.iter_states(),
                self.store.iter_chunks(),
                now=self.clock(),
                memory=self.memory,
                max_series=self.max_series,
                grace=self.grace,
                source_name=self.source.name,  # each document only against its own source
                refused=self.refused() if self.refused is not None else (),
            )
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
        log.info("freshness cycle", behind=snapshot.behind,
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
