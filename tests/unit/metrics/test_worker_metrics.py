"""The worker metrics added for freshness: end-to-end latency, heartbeat, build info."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from prometheus_client import CollectorRegistry

from metrics.definitions import WorkerMetrics


def test_only_applied_changes_count_toward_end_to_end_latency() -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics.create(registry)
    now = datetime.now(UTC)
    metrics.record_applied("indexed", now - timedelta(seconds=20))
    metrics.record_applied("deleted", now + timedelta(hours=1))  # source clock ahead: 0
    metrics.record_applied("skipped_stale", now - timedelta(days=3))
    name = "policy_indexer_change_to_indexed_seconds"
    assert registry.get_sample_value(f"{name}_count") == 2
    assert registry.get_sample_value(f"{name}_bucket", {"le": "0.25"}) == 1
    assert registry.get_sample_value(f"{name}_bucket", {"le": "30.0"}) == 2


def test_heartbeat_and_build_info() -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics.create(registry)
    assert registry.get_sample_value("policy_indexer_heartbeat_timestamp_seconds") == 0
    metrics.beat()
    beat = registry.get_sample_value("policy_indexer_heartbeat_timestamp_seconds")
    assert beat is not None and abs(beat - datetime.now(UTC).timestamp()) < 60
    samples = [s for m in registry.collect() if m.name == "policy_indexer_build"
               for s in m.samples]
    assert samples and samples[0].labels["version"] != ""
