"""Bad files in the monitor and ``status``: an unreadable document is its own status,
counted and named, never a lag; the first cycle beside a first indexing waits for it."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry
from support.chunks import make_chunk
from support.source_fakes import ListSource
from support.waiting import wait_until

from metrics.collector import FreshnessCollector
from metrics.monitor import FreshnessMonitor
from policy_indexer.status_report import StatusReport, document_statuses
from sources.base import SourceEntry, Unreadable, UnreadableKind
from store.memory import InMemoryStore
from store.model import DocumentState

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
FIFO = Unreadable(UnreadableKind.NOT_REGULAR, "/lib/a.md: not a regular file (a FIFO)")
PERMISSION = Unreadable(UnreadableKind.PERMISSION, "/lib/secret.md: cannot open it")


def indexed(store: InMemoryStore, doc: str, version: int) -> None:
    store.write_chunks([make_chunk(doc, version, "s0")])
    store.put_state(DocumentState(doc, version, NOW - 5 * HOUR, NOW - 4 * HOUR,
                                  chunk_ids=(f"{doc}@v{version}#s0",)))


def library() -> tuple[ListSource, InMemoryStore]:
    source, store = ListSource(), InMemoryStore()
    source.put(SourceEntry("good", 2, NOW - 5 * HOUR))
    indexed(store, "good", 2)
    source.put(SourceEntry("a", 0, NOW - 3 * HOUR, unreadable=FIFO))  # never indexed
    source.put(SourceEntry("secret", 0, NOW - 3 * HOUR, unreadable=PERMISSION))
    indexed(store, "secret", 7)  # indexed while it was readable
    return source, store


def collector_for(monitor: FreshnessMonitor) -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(FreshnessCollector(monitor, lag_bound_seconds=600,
                                         leftover_bound_seconds=1800, version="t",
                                         clock=lambda: NOW))
    return registry


def test_unreadable_documents_are_counted_by_reason_and_named_never_lagging() -> None:
    source, store = library()
    monitor = FreshnessMonitor(source, store, clock=lambda: NOW)
    registry = collector_for(monitor)
    assert monitor.run_cycle() is not None
    get = registry.get_sample_value
    assert get("policy_indexer_unreadable_documents", {"reason": "not_regular"}) == 1
    assert get("policy_indexer_unreadable_documents", {"reason": "permission"}) == 1
    assert get("policy_indexer_unreadable_documents", {"reason": "encoding"}) == 0
    assert get("policy_indexer_unreadable_document",
               {"document_id": "a", "reason": "not_regular"}) == 1
    assert get("policy_indexer_max_lag_seconds") == 0  # not "missing for 3 hours"
    for status in ("behind", "missing_from_index", "deleted_at_source"):
        assert get("policy_indexer_documents_behind", {"status": status}) == 0
    assert get("policy_indexer_documents_behind", {"status": "unreadable"}) is None
    assert get("policy_indexer_source_listing_consecutive_failures") == 0


def test_status_shows_the_unreadable_file_with_its_reason_and_no_lag() -> None:
    source, store = library()
    docs, leftovers = document_statuses(source.list_documents(), store.iter_states(),
                                        store.iter_chunks(), now=NOW, grace=timedelta(0))
    report = StatusReport("embedded", "x", "folder", NOW, docs, leftovers)
    by_id = {d.document_id: d for d in report.documents}
    assert (by_id["a"].status, by_id["a"].lag_seconds, by_id["a"].reason) == (
        "unreadable", None, "not_regular: /lib/a.md: not a regular file (a FIFO)")
    assert (by_id["secret"].status, by_id["secret"].indexed_version) == ("unreadable", 7)
    assert by_id["good"].status == "current" and by_id["good"].reason is None
    out = report.to_json()
    assert (out["behind"], out["unreadable"], out["max_lag_seconds"]) == (0, 2, 0.0)


def test_the_first_cycle_waits_for_the_first_indexing() -> None:
    source, store = ListSource(), InMemoryStore()
    source.put(SourceEntry("good", 2, datetime.now(UTC) - 5 * HOUR))
    monitor = FreshnessMonitor(source, store)
    registry = CollectorRegistry()
    registry.register(FreshnessCollector(monitor, lag_bound_seconds=600,
                                         leftover_bound_seconds=1800, version="t"))
    first_indexing = threading.Event()
    thread = threading.Thread(
        target=lambda: monitor.run_forever(60, start_when=first_indexing, start_within_s=30),
        daemon=True)
    thread.start()
    try:
        time.sleep(0.3)  # a cycle would have run by now without the gate (it runs at once)
        assert monitor.status.cycles["ok"] == 0
        assert registry.get_sample_value("policy_indexer_max_lag_seconds") is None  # not measured
        indexed(store, "good", 2)
        first_indexing.set()
        wait_until(lambda: monitor.snapshot, 5, "a cycle after the first indexing", every_s=0.02)
        assert registry.get_sample_value("policy_indexer_max_lag_seconds") == 0
    finally:
        monitor.stop()
        thread.join(5)
    assert not thread.is_alive()


def test_a_first_indexing_that_never_ends_is_measured_after_the_bound() -> None:
    source, store = ListSource(), InMemoryStore()
    source.put(SourceEntry("good", 2, datetime.now(UTC) - 5 * HOUR))
    monitor = FreshnessMonitor(source, store)
    thread = threading.Thread(
        target=lambda: monitor.run_forever(60, start_when=threading.Event(), start_within_s=0.2),
        daemon=True)
    thread.start()
    try:
        snapshot = wait_until(lambda: monitor.snapshot, 5, "a first measure", every_s=0.02)
        assert snapshot is not None
        assert snapshot.behind_by_status["missing_from_index"] == 1  # a real lag now
    finally:
        monitor.stop()
        thread.join(5)
