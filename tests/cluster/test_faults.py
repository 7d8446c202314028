"""Faults during indexing on the replicated cluster, and the exact final state after.

Each test replays 2,000 changes of the Mozilla library through the producer (in batches,
a refused batch sent again) while three workers of one consumer group index them, and
searches and state reads run all along. At a chosen point (a quarter of the changes
committed) one thing is killed with SIGKILL; indexing must go on without it (another
quarter committed while it is down); then it comes back. After each: every document at
its final version and nothing else (0 leftover versions, 0 lost), no dead letters, the
group's committed offsets at the end of every partition, no indexed version ever seen
going back, and the searches that failed during the fault counted
(``.local/cluster-faults.jsonl`` keeps the figures; docs/cluster.md has them).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from support.cluster_faults import (
    LiveCluster,
    ReadLoad,
    Replay,
    busiest_leader,
    cluster_health,
    leaders_or_none,
    primaries_by_node,
    record,
)
from support.index_equality import ExpectedIndex, assert_index_equals
from support.kafka_admin import lag_or_none
from support.kafka_helpers import read_all, wait_for_lag_zero
from support.waiting import wait_until
from support.workers import Pipeline, Worker

from events.model import ChangeEvent
from store.elasticsearch import ElasticsearchStore

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.corpus,
    pytest.mark.slow,
    # kafka-python 3.0 leaks the socket of each refused reconnect while a broker is down
    # (as in tests/integration/test_webhook_kafka_outage.py): ignored in these tests only.
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
]

WORKERS = 3
INDEX_TIMEOUT_S = 600


def committed_sum(bootstrap: str, group: str, topic: str, published: int) -> int | None:
    """Records the group has committed, as (records published) - lag; None while unknown."""
    lag = lag_or_none(bootstrap, group, topic)
    return None if lag is None else published - lag


@dataclass
class Replayed:
    """Workers, the replay and the read load of one test, and how it ends."""

    pipeline: Pipeline
    events: list[ChangeEvent]
    log_dir: Path
    workers: list[Worker] = field(default_factory=list)
    load: ReadLoad | None = None
    replay: Replay | None = None
    marks: dict[str, float] = field(default_factory=dict)

    def start(self, workers: int = WORKERS) -> None:
        self.workers = [self.pipeline.start_worker(self.log_dir) for _ in range(workers)]
        self.replay = Replay(self.pipeline.kafka, self.pipeline.topic, self.events)
        self.replay.start()
        self.marks["replay_started"] = time.monotonic()

    def start_reads(self, es_urls: list[str]) -> None:
        """Once the first commit landed (the indices exist), until ``finish``."""
        self.wait_committed(1, "the first committed change")
        ids = sorted({event.document_id for event in self.events})
        self.load = ReadLoad(es_urls, self.pipeline.unique, ids)
        self.load.start()

    def check_workers(self) -> None:
        for worker in self.workers:
            code = worker.proc.poll()
            assert code is None, f"a worker exited ({code}) mid-replay:\n{worker.tail()}"

    def committed(self, bootstrap: str | None = None) -> int | None:
        assert self.replay is not None
        if self.replay.error is not None:
            raise AssertionError(f"the replay failed: {self.replay.error!r}")
        return committed_sum(bootstrap or self.pipeline.kafka, self.pipeline.group,
                             self.pipeline.topic, self.replay.published)

    def wait_committed(self, at_least: int, what: str, bootstrap: str | None = None,
                       timeout_s: float = INDEX_TIMEOUT_S) -> int:
        def probe() -> int | None:
            self.check_workers()
            return self.committed(bootstrap)
        got = wait_until(probe, timeout_s, f"{what} ({at_least} changes committed)",
                         every_s=0.5, accept=lambda n: n is not None and n >= at_least)
        assert got is not None
        return got

    def finish(self, store: ElasticsearchStore, expected: ExpectedIndex,
               bootstrap: str | None = None) -> dict[str, Any]:
        """Everything published and committed, the workers stopped cleanly, the index
        exactly the library's final state; the read load's figures."""
        assert self.replay is not None and self.load is not None
        replay = self.replay
        wait_until(lambda: replay.done_at is not None or replay.error is not None,
                   INDEX_TIMEOUT_S, "the replay to publish every change", every_s=0.5)
        assert replay.error is None, repr(replay.error)
        wait_for_lag_zero(bootstrap or self.pipeline.kafka, self.pipeline.group,
                          self.pipeline.topic, timeout_s=INDEX_TIMEOUT_S,
                          check=self.check_workers)
        self.marks["lag_zero"] = time.monotonic()
        reads = self.load.stop()
        codes = [worker.stop(timeout_s=60) for worker in self.workers]
        assert codes == [0] * len(codes), codes
        assert_index_equals(store, expected)
        assert read_all(bootstrap or self.pipeline.kafka, self.pipeline.dead_letter_topic,
                        expect=0, timeout_s=2) == []
        assert reads.regressions == [], reads.regressions[:10]
        assert reads.state_scans > 0 and reads.searches > 0
        return {"changes": len(self.events), "published_retries": replay.retries,
                "searches": reads.searches, "searches_failed": len(reads.search_failures),
                "state_scans": reads.state_scans,
                "state_scans_failed": len(reads.state_failures),
                "search_view_older_versions": len(reads.search_view_regressions),
                "read_errors": dict(reads.errors),
                "replay_to_lag_zero_s": round(self.marks["lag_zero"]
                                              - self.marks["replay_started"], 1)}

    def kill_all(self) -> None:
        for worker in self.workers:
            worker.kill()
        if self.load is not None and self.load.is_alive():
            self.load.stop()


@pytest.fixture
def replayed(cluster_pipeline: Pipeline, mozilla_events: list[ChangeEvent],
             tmp_path: Path) -> Iterator[Replayed]:
    run = Replayed(cluster_pipeline, mozilla_events, tmp_path / "logs")
    yield run
    run.kill_all()


def fault_window(run: Replayed, start: float, end: float) -> dict[str, Any]:
    assert run.load is not None
    return {"searches_during_fault": run.load.searches_between(start, end),
            "searches_failed_during_fault": run.load.reads.failed_between(start, end)}


def bootstrap_without(cluster: LiveCluster, *broker_ids: int) -> str:
    layout = cluster.layout
    return ",".join(f"{layout.host}:{layout.kafka(i)}" for i in layout.indices
                    if i not in broker_ids)


def test_broker_leading_most_partitions_killed_mid_replay_then_restarted(
    cluster: LiveCluster, replayed: Replayed, cluster_store: ElasticsearchStore,
    mozilla_expected: ExpectedIndex,
) -> None:
    total = len(replayed.events)
    topic = replayed.pipeline.topic
    replayed.start()
    replayed.start_reads(cluster.es_urls())
    at_kill = replayed.wait_committed(total // 4, "a quarter of the log indexed")
    victim = busiest_leader(cluster.layout.bootstrap, [topic])
    led = list((leaders_or_none(cluster.layout.bootstrap, topic) or {}).values()).count(victim)
    killed_at = cluster.kill9(f"kafka-{victim}")
    survivors = bootstrap_without(cluster, victim)

    wait_until(lambda: leaders_or_none(survivors, topic), 120,
               f"every partition led by a broker other than {victim}", every_s=0.2,
               accept=lambda got: got is not None and bool(got)
               and all(b not in (victim, -1) for b in got.values()))
    failover_s = time.monotonic() - killed_at
    replayed.wait_committed(min(total, at_kill + total // 4),
                            f"indexing to go on with broker {victim} down", survivors)
    restart_at = time.monotonic()
    cluster.start(f"kafka-{victim}")
    restarted_s = time.monotonic() - restart_at

    figures = replayed.finish(cluster_store, mozilla_expected)
    figures.update(fault_window(replayed, killed_at, restart_at + restarted_s))
    record("broker_killed", victim=f"kafka-{victim}", partitions_it_led=led,
           committed_at_kill=at_kill, leaders_moved_s=round(failover_s, 1),
           broker_down_s=round(restart_at - killed_at, 1),
           broker_restart_s=round(restarted_s, 1), **figures)


def test_elasticsearch_node_holding_primaries_killed_mid_replay_then_restarted(
    cluster: LiveCluster, replayed: Replayed, cluster_store: ElasticsearchStore,
    mozilla_expected: ExpectedIndex,
) -> None:
    total = len(replayed.events)
    urls = cluster.es_urls()
    replayed.start()
    replayed.start_reads(urls)
    at_kill = replayed.wait_committed(total // 4, "a quarter of the log indexed")
    primaries = primaries_by_node(urls, f"{replayed.pipeline.unique}*")
    victim, held = primaries.most_common(1)[0]
    killed_at = cluster.kill9(victim)
    survivors = [u for u in urls if not u.endswith(f":{cluster.layout.port_of(victim)}")]

    def promoted() -> bool:
        after = primaries_by_node(survivors, f"{replayed.pipeline.unique}*")
        return victim not in after and sum(after.values()) == sum(primaries.values())

    wait_until(promoted, 120, f"the replicas of {victim}'s primaries to be promoted",
               every_s=0.2, retry_on=(OSError, KeyError))
    promoted_s = time.monotonic() - killed_at
    replayed.wait_committed(min(total, at_kill + total // 4),
                            f"indexing to go on with {victim} down")
    restart_at = time.monotonic()
    cluster.start(victim)
    wait_until(lambda: cluster_health(urls), 300, "the cluster to be green again",
               every_s=0.5, accept=lambda status: status == "green")
    green_s = time.monotonic() - restart_at

    figures = replayed.finish(cluster_store, mozilla_expected)
    figures.update(fault_window(replayed, killed_at, restart_at + green_s))
    record("es_node_killed", victim=victim, primaries_it_held=held,
           committed_at_kill=at_kill, primaries_promoted_s=round(promoted_s, 1),
           node_down_s=round(restart_at - killed_at, 1),
           restart_to_green_s=round(green_s, 1), **figures)


def test_worker_killed_mid_replay_and_another_started(
    cluster: LiveCluster, replayed: Replayed, cluster_store: ElasticsearchStore,
    mozilla_expected: ExpectedIndex,
) -> None:
    total = len(replayed.events)
    replayed.start()
    replayed.start_reads(cluster.es_urls())
    at_kill = replayed.wait_committed(total // 4, "a quarter of the log indexed")
    victim = replayed.workers.pop(0)
    killed_at = time.monotonic()
    victim.kill()
    assert victim.proc.returncode == -9
    replayed.wait_committed(min(total, at_kill + total // 8),
                            "the two survivors to take over the dead worker's partitions")
    takeover_s = time.monotonic() - killed_at
    replayed.workers.append(replayed.pipeline.start_worker(replayed.log_dir))
    figures = replayed.finish(cluster_store, mozilla_expected)
    figures.update(fault_window(replayed, killed_at, killed_at + takeover_s))
    record("worker_killed", committed_at_kill=at_kill,
           survivors_progress_s=round(takeover_s, 1), **figures)


