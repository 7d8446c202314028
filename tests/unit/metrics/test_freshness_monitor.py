"""A monitor cycle over the in-memory store and source, read through the collector."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry
from support.chunks import make_chunk
from support.source_fakes import ListSource

from metrics.collector import FreshnessCollector
from metrics.monitor import FreshnessMonitor
from sources.base import SourceEntry
from sources.errors import SourceDataError, SourceUnavailableError
from store.memory import InMemoryStore
from store.model import DocumentState

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


def index(store: InMemoryStore, doc: str, version: int, *, deleted: bool = False,
          indexed_ago: timedelta = 60 * MIN, chunks: int = 2) -> None:
    ids = [] if deleted else [f"{doc}@v{version}#s{i}" for i in range(chunks)]
    if not deleted:
        store.write_chunks([make_chunk(doc, version, f"s{i}") for i in range(chunks)])
    store.put_state(DocumentState(doc, version, NOW - 100 * MIN, NOW - indexed_ago,
                                  chunk_ids=tuple(ids), deleted=deleted))


Setup = tuple[ListSource, InMemoryStore, Clock, FreshnessMonitor, CollectorRegistry]


@pytest.fixture
def setup() -> Setup:
    source, store, clock = ListSource(), InMemoryStore(), Clock()
    for doc in ("a", "b", "c", "d"):
        source.put(SourceEntry(doc, 2, NOW - 100 * MIN))
        index(store, doc, 2)
    source.put(SourceEntry("b", 3, NOW - 5 * MIN))  # behind by 5 min
    source.put(SourceEntry("e", 1, NOW - 20 * MIN))  # missing from the index
    source.put(SourceEntry("d", 3, NOW - 2 * MIN, deleted=True))  # deleted at source 2 min ago
    index(store, "gone", 1)  # not listed at all: the source keeps no tombstone
    monitor = FreshnessMonitor(source, store, max_series=2, grace=timedelta(minutes=10),
                               clock=clock)
    registry = CollectorRegistry()
    registry.register(FreshnessCollector(monitor, lag_bound_seconds=600,
                                         leftover_bound_seconds=1800, version="t", clock=clock))
    return source, store, clock, monitor, registry


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_one_cycle_reports_lag_counts_and_the_capped_series(setup: Setup) -> None:
    _source, _store, clock, monitor, registry = setup
    assert value(registry, "policy_indexer_max_lag_seconds") is None  # nothing before a cycle
    assert monitor.run_cycle() is not None
    assert value(registry, "policy_indexer_source_documents") == 4  # a, b, c, e (d deleted)
    assert value(registry, "policy_indexer_indexed_documents") == 5  # a, b, c, d, gone
    assert value(registry, "policy_indexer_documents_behind", status="behind") == 1
    assert value(registry, "policy_indexer_documents_behind", status="missing_from_index") == 1
    assert value(registry, "policy_indexer_documents_behind", status="deleted_at_source") == 2
    assert value(registry, "policy_indexer_max_lag_seconds") == 20 * 60
    # two series (the cap): e (20 min) and b (5 min); d (2 min) and gone (0 s) dropped
    assert value(registry, "policy_indexer_document_lag_seconds",
                 document_id="e", status="missing_from_index") == 1200
    assert value(registry, "policy_indexer_document_lag_seconds",
                 document_id="b", status="behind") == 300
    assert value(registry, "policy_indexer_document_lag_series_dropped") == 2
    # 6 documents known; p95 is the largest lag at nearest rank ceil(0.95*6) = 6
    assert value(registry, "policy_indexer_lag_p95_seconds") == 1200
    assert value(registry, "policy_indexer_lag_bound_seconds") == 600
    # lag grows at scrape time without a new cycle
    clock.now = NOW + 10 * MIN
    assert value(registry, "policy_indexer_max_lag_seconds") == 30 * 60
    assert value(registry, "policy_indexer_document_lag_seconds",
                 document_id="gone", status="deleted_at_source") is None


def test_the_cap_is_filled_with_current_documents_at_zero(setup: Setup) -> None:
    _source, _store, _clock, monitor, registry = setup
    monitor.max_series = 4  # 4 lagging documents (b, e, d, gone) fill it: no current one
    monitor.run_cycle()
    assert value(registry, "policy_indexer_document_lag_seconds",
                 document_id="a", status="current") is None
    monitor.max_series = 5
    monitor.run_cycle()
    assert value(registry, "policy_indexer_document_lag_seconds",
                 document_id="a", status="current") == 0
    assert value(registry, "policy_indexer_document_lag_seconds",
                 document_id="c", status="current") is None


def test_all_series_include_current_documents_at_zero(setup: Setup) -> None:
    _source, _store, _clock, monitor, registry = setup
    monitor.max_series = None
    monitor.run_cycle()
    assert value(registry, "policy_indexer_document_lag_seconds",
                 document_id="a", status="current") == 0
    assert value(registry, "policy_indexer_document_lag_seconds",
                 document_id="gone", status="deleted_at_source") == 0  # first seen absent now
    assert value(registry, "policy_indexer_document_lag_series_dropped") == 0


def test_leftovers_count_chunks_and_documents_with_their_age(setup: Setup) -> None:
    _source, store, _clock, monitor, registry = setup
    monitor.run_cycle()
    assert value(registry, "policy_indexer_leftover_versions") == 0
    assert value(registry, "policy_indexer_leftover_age_seconds") == 0
    # a now at v3, indexed 40 min ago, but its v2 chunks were never deleted
    index(store, "a", 3, indexed_ago=40 * MIN)
    # c deleted (tombstone) 15 min ago, its chunks left behind
    index(store, "c", 3, deleted=True, indexed_ago=15 * MIN)
    # a chunk of a document without a state, written just now: in the grace period
    store.write_chunks([make_chunk("inflight", 1)])
    monitor.run_cycle()
    assert value(registry, "policy_indexer_leftover_versions") == 4
    assert value(registry, "policy_indexer_leftover_documents") == 2
    assert value(registry, "policy_indexer_leftover_age_seconds") == 40 * 60


def test_an_unlistable_source_is_counted_and_never_reads_as_no_lag(setup: Setup) -> None:
    source, _store, clock, monitor, registry = setup
    source.fail_with = SourceUnavailableError("cms down")
    assert monitor.run_cycle() is None
    assert monitor.run_cycle() is None
    assert value(registry, "policy_indexer_source_listing_consecutive_failures") == 2
    assert value(registry, "policy_indexer_source_listing_failures_total",
                 error="SourceUnavailableError") == 2
    assert value(registry, "policy_indexer_source_last_success_timestamp_seconds") == 0
    assert value(registry, "policy_indexer_max_lag_seconds") is None  # not 0
    source.fail_with = None
    monitor.run_cycle()
    assert value(registry, "policy_indexer_source_listing_consecutive_failures") == 0
    assert value(registry, "policy_indexer_max_lag_seconds") == 1200
    # fails again: the last snapshot stays, and its lag keeps growing
    source.fail_with = SourceDataError("bad page")
    clock.now = NOW + 5 * MIN
    assert monitor.run_cycle() is None
    assert value(registry, "policy_indexer_max_lag_seconds") == 1500
    assert value(registry, "policy_indexer_source_listing_failures_total",
                 error="SourceDataError") == 1
    assert value(registry, "policy_indexer_monitor_cycles_total", result="source_failed") == 3


def test_a_failed_listing_does_not_touch_the_lag_memory(setup: Setup) -> None:
    source, _store, _clock, monitor, registry = setup
    monitor.run_cycle()
    remembered = dict(monitor.memory.behind)
    source.put(SourceEntry("b", 4, NOW - MIN))
    source.fail_with = SourceUnavailableError("down")
    monitor.run_cycle()
    assert monitor.memory.behind == remembered
    source.fail_with = None
    monitor.run_cycle()  # b keeps lagging from v3's change (5 min), not v4's
    assert value(registry, "policy_indexer_document_lag_seconds",
                 document_id="b", status="behind") == 300
