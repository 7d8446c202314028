from __future__ import annotations

import json
import urllib.error
import urllib.request

from prometheus_client import CollectorRegistry

from consumers.retry import HealthState
from metrics.definitions import WorkerMetrics
from policy_indexer.runtime.http import MetricsServer, worker_health


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_healthz_says_when_the_worker_is_retrying_and_metrics_are_served() -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics.create(registry)
    metrics.events.labels(outcome="indexed").inc(3)
    health = HealthState()
    server = MetricsServer("127.0.0.1", 0, registry, worker_health(health))
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        assert get(f"{base}/healthz") == (200, json.dumps(
            {"status": "ok", "attempts": 0, "last_error": None}))
        health.retrying, health.attempts, health.last_error = True, 4, "TransientStoreError: down"
        code, body = get(f"{base}/readyz")
        assert code == 503
        assert json.loads(body)["status"] == "retrying"
        # alive all the same: a restart would not bring Elasticsearch back
        assert get(f"{base}/healthz")[0] == 200
        code, text = get(f"{base}/metrics")
        assert code == 200
        assert 'policy_indexer_events_total{outcome="indexed"} 3.0' in text
    finally:
        server.stop()


def test_healthz_says_retrying_while_kafka_is_out_of_reach() -> None:
    health = HealthState(kafka_unreachable="Kafka: no heartbeat to the group coordinator for 7 s")
    server = MetricsServer("127.0.0.1", 0, CollectorRegistry(), worker_health(health))
    server.start()
    try:
        code, body = get(f"http://127.0.0.1:{server.port}/readyz")
        assert (code, json.loads(body)["status"]) == (503, "retrying")
        assert "no heartbeat" in json.loads(body)["last_error"]
        assert get(f"http://127.0.0.1:{server.port}/healthz")[0] == 200
        health.kafka_unreachable = None
        assert get(f"http://127.0.0.1:{server.port}/readyz")[0] == 200
    finally:
        server.stop()


def test_only_metrics_and_the_probes_answer() -> None:
    server = MetricsServer("127.0.0.1", 0, CollectorRegistry())
    server.start()
    try:
        assert get(f"{server.url}/healthz")[0] == 200
        assert get(f"{server.url}/readyz")[0] == 200
        assert get(f"{server.url}/metrics?x=1")[0] == 200
        assert get(f"{server.url}/anything")[0] == 404
        assert get(f"{server.url}/metricsfoo")[0] == 404
    finally:
        server.stop()


def test_a_process_registry_carries_the_process_platform_and_gc_metrics() -> None:
    from policy_indexer.runtime.http import process_registry

    registry = process_registry()
    assert registry.get_sample_value("process_cpu_seconds_total") is not None
    assert registry.get_sample_value("process_resident_memory_bytes")
    assert any(m.name == "python_info" for m in registry.collect())
    assert any(m.name.startswith("python_gc_") for m in registry.collect())


def test_a_failed_part_fails_liveness_and_readiness() -> None:
    server = MetricsServer("127.0.0.1", 0, CollectorRegistry(),
                           lambda: {"status": "failed", "last_error": "watcher gave up"})
    server.start()
    try:
        assert get(f"{server.url}/healthz")[0] == 503
        assert get(f"{server.url}/readyz")[0] == 503
    finally:
        server.stop()
