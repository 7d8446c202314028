"""/readyz stays ready through a short retry and says why; /healthz fails on a stuck loop.

The clock is the test's: no sleeps. A worker's ``HealthState`` drives both, as in a
process (``worker_health``, ``worker_heartbeat``); the last test goes through HTTP.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from prometheus_client import CollectorRegistry

from consumers.retry import HealthState
from policy_indexer.runtime.http import MetricsServer, worker_health, worker_heartbeat
from policy_indexer.runtime.probes import ProbePolicy, Probes
from policy_indexer.settings import Settings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def worker_probes(health: HealthState, clock: Clock, *, grace_s: float = 60.0,
                  heartbeat_s: float | None = 180.0) -> Probes:
    return Probes(worker_health(health), ProbePolicy(grace_s, heartbeat_s),
                  heartbeat=worker_heartbeat(health), clock=clock)


def test_a_short_retry_stays_ready_with_its_reason_then_not_ready_after_the_grace() -> None:
    clock, health = Clock(), HealthState()
    probes = worker_probes(health, clock)
    assert probes.readiness()[0] == 200
    health.retrying, health.attempts = True, 3
    health.last_error, health.waiting_for = "TransientStoreError: es down", "store"
    code, body = probes.readiness()
    assert code == 200
    assert body["status"] == "retrying" and body["waiting_for"] == "store"
    assert body["last_error"] == "TransientStoreError: es down"
    assert (body["not_ok_for_s"], body["readiness_grace_s"]) == (0.0, 60.0)
    clock.now += 59
    assert probes.readiness()[0] == 200
    clock.now += 1
    code, body = probes.readiness()
    assert (code, body["status"], body["not_ok_for_s"]) == (503, "retrying", 60.0)
    # it recovers: ready again at once, and the next blip gets a whole grace again
    health.retrying = False
    assert probes.readiness() == (200, {"status": "ok", "attempts": 3,
                                        "last_error": "TransientStoreError: es down"})
    health.kafka_unreachable = "Kafka: no heartbeat to the group coordinator for 7 s"
    clock.now += 300
    assert probes.readiness()[0] == 200
    clock.now += 61
    assert probes.readiness()[0] == 503


def test_starting_and_stopping_are_not_ready_at_once() -> None:
    clock = Clock()
    starting = worker_probes(HealthState(starting=True), clock)
    assert starting.readiness()[0] == 503
    stopping = worker_probes(HealthState(stopping=True), clock)
    assert stopping.readiness()[0] == 503


def test_a_grace_of_zero_is_the_old_rule() -> None:
    health = HealthState(retrying=True)
    assert worker_probes(health, Clock(), grace_s=0).readiness()[0] == 503


def test_a_failing_monitor_gets_the_same_grace() -> None:
    clock = Clock()
    state = {"status": "failing", "last_error": "SourceUnavailableError: 502"}
    probes = Probes(lambda: dict(state), ProbePolicy(readiness_grace_s=120), clock=clock)
    assert probes.readiness()[0] == 200
    clock.now += 120
    assert probes.readiness()[0] == 503


def test_liveness_fails_when_the_loop_stops_turning() -> None:
    clock, health = Clock(), HealthState(starting=True)
    probes = worker_probes(health, clock)
    # connecting at start: no heartbeat yet, alive however long it takes
    clock.now += 3600
    assert probes.liveness()[0] == 200
    health.starting = False
    health.heartbeat = clock.now
    clock.now += 180
    code, body = probes.liveness()
    assert (code, body["heartbeat_age_s"]) == (200, 180.0)
    clock.now += 1
    code, body = probes.liveness()
    assert code == 503
    assert body["status"] == "stuck"
    assert body["last_error"] == "the loop has not turned for 181 s (more than 180 s)"
    # a turn (the loop also turns while it backs off) makes it live again
    health.heartbeat = clock.now
    assert probes.liveness()[0] == 200


def test_retrying_is_alive_and_a_failed_part_is_not() -> None:
    clock, health = Clock(), HealthState(retrying=True, heartbeat=1000.0)
    probes = worker_probes(health, clock)
    clock.now += 10_000
    health.heartbeat = clock.now  # backing off polls the paused partitions: it turns
    assert probes.liveness()[0] == 200
    failed = Probes(lambda: {"status": "failed"}, ProbePolicy(), clock=clock)
    assert failed.liveness()[0] == 503
    assert failed.readiness()[0] == 503


def test_without_a_heartbeat_timeout_the_age_is_not_judged() -> None:
    clock, health = Clock(), HealthState(heartbeat=0.0)
    assert worker_probes(health, clock, heartbeat_s=None).liveness()[0] == 200


def test_the_settings_give_the_policy() -> None:
    settings = Settings(readiness_grace_seconds=15,
                        liveness_heartbeat_seconds=90)
    assert settings.probe_policy() == ProbePolicy(15.0, 90.0)
    default = Settings().probe_policy()
    assert default == ProbePolicy(60.0, 180.0)


def get(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_the_metrics_server_answers_what_the_probes_decide() -> None:
    health = HealthState(retrying=True, last_error="TransientError: kafka", heartbeat=0.0)
    server = MetricsServer("127.0.0.1", 0, CollectorRegistry(), worker_health(health),
                           policy=ProbePolicy(readiness_grace_s=3600, heartbeat_timeout_s=1),
                           heartbeat=worker_heartbeat(health))
    server.start()
    try:
        code, body = get(f"{server.url}/readyz")
        assert (code, body["status"], body["last_error"]) == (200, "retrying",
                                                              "TransientError: kafka")
        code, body = get(f"{server.url}/healthz")  # heartbeat at monotonic 0: long ago
        assert (code, body["status"]) == (503, "stuck")
    finally:
        server.stop()
