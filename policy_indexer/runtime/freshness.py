"""Is a passage's document behind its source? The answer the search puts on every passage.

``PassageFreshness`` keeps the configured source's last listing (refreshed in
the background every ``monitor_interval_seconds`` by the search processes, or
once for a one-shot ``search``) and, per passage, compares it with the
document's indexed state, read in real time, through the monitor's own
comparison (``foundation.comparison.verdict``) and lag (``metrics.lag``): a
stale passage announces itself with the source's version and the lag. Without
a source nothing is measured, and passages carry no freshness (never a guess).

The lag here is the time since the source's *latest* change of the document:
the monitor also remembers earlier changes the index lacks, so for a
document edited several times while the index was behind, the monitor's figure
is the larger, correct one; this one is a lower bound, said in docs/search.md.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import structlog

from foundation.comparison import Verdict, verdict
from metrics.lag import LagStatus, verdict_lag
from retrieval.models import Freshness
from sources.base import Source, SourceEntry
from sources.errors import SourceError
from sources.unlisted import covering, unlisted_folders
from store.base import Store
from store.errors import StoreError

log = structlog.get_logger(__name__)


class PassageFreshness:
    """``freshness(document_id)`` for ``SearchService``; thread-safe."""

    def __init__(self, source: Source, store: Store) -> None:
        self._source = source
        self._store = store
        self._lock = threading.Lock()
        self._listing: dict[str, SourceEntry] | None = None
        self._unlisted: list[str] = []  # folders the source cannot list (sources.unlisted)
        self._listed_at: datetime | None = None
        self._stop = threading.Event()

    def refresh(self) -> bool:
        """List the source again; on failure keep the last listing (and say so in the log)."""
        try:
            entries = {e.document_id: e for e in self._source.list_documents()}
        except SourceError as exc:
            log.warning("freshness listing failed", source=self._source.name, error=str(exc))
            return False
        with self._lock:
            self._listing, self._listed_at = entries, datetime.now(UTC)
            self._unlisted = list(unlisted_folders(entries.values()))
        return True

    def run(self, interval_s: float) -> None:
        """Refresh every ``interval_s`` until ``request_stop`` (run it in a ``ThreadPart``)."""
        while not self._stop.is_set():
            self.refresh()
            self._stop.wait(interval_s)

    def request_stop(self) -> None:
        self._stop.set()

    def __call__(self, document_id: str) -> Freshness | None:
        with self._lock:
            listing, listed_at = self._listing, self._listed_at
        if listing is None:
            return None
        entry = listing.get(document_id)
        if entry is None and covering(document_id, self._unlisted) is not None:
            return None  # under a folder the source cannot list: unknown, as if unreadable
        try:
            state = self._store.get_state(document_id)
        except StoreError:
            return None
        found = verdict(document_id, entry, state, source=self._source.name)
        if found is Verdict.OTHER_OWNER:
            return None  # another source's document: not measured against this one
        lag = verdict_lag(document_id, found, entry)
        if lag is None or lag.status is LagStatus.UNREADABLE:
            return None
        now = datetime.now(UTC)
        return Freshness(
            behind_source=lag.status is not LagStatus.CURRENT,
            source_version=entry.version if entry is not None and not entry.deleted else None,
            lag_seconds=round(lag.seconds(now), 1),
            measured_at=listed_at,
        )
