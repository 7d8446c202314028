"""The monitor and ``status`` compare each document only with its own source.

A folder listing beside documents that came only through the webhook (owner ``cms``):
they are not deleted at the folder, their lag is not counted, and ``status`` shows
them as ``other_owner``; the folder's own and unowned documents are compared as before.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry
from support.chunks import make_chunk
from support.source_fakes import ListSource

from metrics.collector import FreshnessCollector
from metrics.freshness import FreshnessSnapshot, LagMemory, measure
from metrics.monitor import FreshnessMonitor
from policy_indexer.status_report import StatusReport, document_statuses
from sources.base import SourceEntry
from store.memory import InMemoryStore
from store.model import ChunkRef, DocumentState

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def state(doc: str, version: int, owner: str | None) -> DocumentState:
    return DocumentState(doc, version, NOW - 3 * HOUR, NOW - 2 * HOUR,
                         (f"{doc}@v{version}#a",), "h", owner=owner)


STATES = [
    state("refunds", 2, "folder"),   # the folder's, behind its file (v3)
    state("legacy", 1, None),        # unowned, gone from the folder: deleted there
    state("cms-only", 5, "cms"),     # came only through the webhook
    state("clash", 7, "cms"),        # the folder has a file too: the cms owns it
]
LISTING = [
    SourceEntry("refunds", 3, NOW - HOUR),
    SourceEntry("clash", 1, NOW - 5 * HOUR),
]
CHUNKS = [ChunkRef(f"{s.document_id}@v{s.version}#a", s.document_id, s.version, s.indexed_at)
          for s in STATES] + [ChunkRef("cms-only@v4#a", "cms-only", 4, NOW - 3 * HOUR)]


def snapshot(source_name: str | None) -> FreshnessSnapshot:
    return measure(LISTING, STATES, CHUNKS, now=NOW, memory=LagMemory(), max_series=None,
                   grace=timedelta(minutes=10), source_name=source_name)


def test_the_monitor_does_not_count_another_sources_documents_as_lag() -> None:
    snap = snapshot("folder")
    lagging = {lag.document_id: lag.status.value for lag in snap.most_lagging}
    assert lagging == {"refunds": "behind", "legacy": "deleted_at_source"}
    assert snap.max_lag_seconds(NOW) == HOUR.total_seconds()  # refunds; not clash's 5 h
    assert snap.behind_by_status["deleted_at_source"] == 1
    assert snap.other_owner_documents == 2
    assert snap.leftover_versions == 1  # cms-only@v4: the index's own business, still counted


def test_without_a_source_name_every_document_is_compared_as_before() -> None:
    lagging = {lag.document_id: lag.status.value for lag in snapshot(None).most_lagging}
    assert lagging == {"refunds": "behind", "legacy": "deleted_at_source",
                       "cms-only": "deleted_at_source"}  # clash: v7 >= v1, current


def test_status_shows_another_sources_documents_as_other_owner() -> None:
    docs, _ = document_statuses(LISTING, STATES, CHUNKS, now=NOW, grace=timedelta(minutes=10),
                                source_name="folder")
    by_id = {d.document_id: d for d in docs}
    assert {d: s.status for d, s in by_id.items()} == {
        "refunds": "behind", "legacy": "deleted_at_source",
        "cms-only": "other_owner", "clash": "other_owner"}
    cms_only = by_id["cms-only"]
    assert (cms_only.owner, cms_only.lag_seconds, cms_only.deleted_at_source) == (
        "cms", None, False)
    assert cms_only.reason is not None and "'cms'" in cms_only.reason
    assert by_id["refunds"].owner == "folder" and by_id["legacy"].owner is None
    report = StatusReport("embedded", "x", "folder", NOW, docs)
    assert report.behind == 2
    assert report.max_lag_seconds == HOUR.total_seconds()  # refunds; clash (5 h) not measured


def test_the_monitors_metrics_leave_another_sources_documents_out_of_lag() -> None:
    """The issue's report: webhook-only documents grew a lag until the max-lag alert fired."""
    source, store = ListSource(), InMemoryStore()  # the source is named "memory"
    source.put(SourceEntry("own", 2, NOW - HOUR))
    for doc, owner in (("own", "memory"), ("webhook-a", "cms"), ("webhook-b", "cms")):
        store.write_chunks([make_chunk(doc, 2, "s0")])
        store.put_state(DocumentState(doc, 2, NOW - 5 * HOUR, NOW - 4 * HOUR,
                                      chunk_ids=(f"{doc}@v2#s0",), owner=owner))
    now = [NOW]
    monitor = FreshnessMonitor(source, store, clock=lambda: now[0])
    registry = CollectorRegistry()
    registry.register(FreshnessCollector(monitor, lag_bound_seconds=600,
                                         leftover_bound_seconds=1800, version="t",
                                         clock=lambda: now[0]))
    assert monitor.run_cycle() is not None
    now[0] = NOW + 10 * HOUR  # a second cycle, and the scrape, much later: nothing grew
    assert monitor.run_cycle() is not None
    get = registry.get_sample_value
    assert get("policy_indexer_max_lag_seconds") == 0
    assert get("policy_indexer_documents_behind", {"status": "deleted_at_source"}) == 0
    assert get("policy_indexer_other_owner_documents") == 2
    assert get("policy_indexer_indexed_documents") == 3
