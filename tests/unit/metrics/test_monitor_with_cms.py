"""The monitor reading a CMS over real HTTP: lag from its listing, and an outage counted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry
from support.cms import FakeCms, serve_cms

from metrics.collector import FreshnessCollector
from metrics.monitor import FreshnessMonitor
from sources.cms import CmsApiSource
from store.memory import InMemoryStore
from store.model import DocumentState

NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)


def test_lag_from_a_cms_listing_and_a_cms_outage() -> None:
    store = InMemoryStore()
    store.put_state(DocumentState("refund", 3, NOW, NOW))
    cms = FakeCms({
        "refund": {"id": "refund", "version": 4, "changed_at": "2025-06-01T11:00:00Z"},
        "terms": {"id": "terms", "version": 1, "changed_at": "2025-06-01T11:30:00Z"},
    })
    with serve_cms(cms):
        source = CmsApiSource(cms.url, headers={"X-Api-Key": "k"}, page_size=1,
                              attempts=2, backoff_seconds=0.01)
        monitor = FreshnessMonitor(source, store, clock=lambda: NOW)
        registry = CollectorRegistry()
        registry.register(FreshnessCollector(monitor, lag_bound_seconds=3600,
                                             leftover_bound_seconds=1800, version="t",
                                             clock=lambda: NOW + timedelta(minutes=1)))
        monitor.run_cycle()
        assert registry.get_sample_value("policy_indexer_max_lag_seconds") == 61 * 60
        assert registry.get_sample_value(
            "policy_indexer_documents_behind", {"status": "missing_from_index"}) == 1
        cms.fail_with = 503
        monitor.run_cycle()
        source.close()
    assert registry.get_sample_value(
        "policy_indexer_source_listing_failures_total", {"error": "SourceUnavailableError"}) == 1
    assert registry.get_sample_value("policy_indexer_max_lag_seconds") == 61 * 60
