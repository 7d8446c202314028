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

Two more on the same replay: one worker, then two more started once a quarter is
committed (the group rebalances to three, two partitions each); and a network partition
of one broker: every client reaches it only through a TCP proxy of the test's own
(``support.tcp_proxy``; the broker restarted to advertise the proxy's port), and the proxy
drops every connection and refuses new ones for ``CUT_S`` seconds, then lets them through.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kafka.errors import KafkaError
from support.cluster_faults import (
    LiveCluster,
    ReadLoad,
    Replay,
    busiest_leader,
    cluster_health,
    elect_preferred_leaders,
    group_assignment,
    leaders_or_none,
    partition_states,
    partition_states_or_none,
    primaries_by_node,
    record,
    tcp_peer_ports,
)
from support.index_equality import ExpectedIndex, assert_index_equals
from support.kafka_admin import lag_or_none
from support.kafka_helpers import read_all, wait_for_lag_zero
from support.tcp_proxy import TcpProxy
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
CUT_S = 20  # how long the broker stays cut off from its clients


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


def test_scaled_from_one_worker_to_three_mid_replay(
    cluster: LiveCluster, replayed: Replayed, cluster_store: ElasticsearchStore,
    mozilla_expected: ExpectedIndex,
) -> None:
    total = len(replayed.events)
    pipeline = replayed.pipeline
    replayed.start(workers=1)
    replayed.start_reads(cluster.es_urls())
    first_commit_at = time.monotonic()
    one = group_assignment(pipeline.kafka, pipeline.group, pipeline.topic)
    at_scale = replayed.wait_committed(total // 4, "a quarter of the log indexed by one worker")
    scaled_at = time.monotonic()
    replayed.workers += [pipeline.start_worker(replayed.log_dir) for _ in range(2)]

    first_seen: dict[int, float] = {}  # group members -> when first seen

    def spread() -> dict[str, list[int]] | None:
        replayed.check_workers()
        members: list[int] = []
        got = group_assignment(pipeline.kafka, pipeline.group, pipeline.topic, members)
        for n in members:
            first_seen.setdefault(n, time.monotonic())
        return got

    assigned = wait_until(
        spread, 120, "the group to rebalance over three workers", every_s=0.2,
        accept=lambda got: got is not None and len(got) == 3 and all(got.values())
        and sorted(p for ps in got.values() for p in ps) == list(range(pipeline.partitions)))
    rebalanced_at = time.monotonic()
    at_rebalance = replayed.committed() or at_scale
    later = replayed.wait_committed(min(total, at_rebalance + total // 4),
                                    "three workers to index another quarter")
    three_s = time.monotonic() - rebalanced_at
    figures = replayed.finish(cluster_store, mozilla_expected)
    figures.update(fault_window(replayed, scaled_at, rebalanced_at))
    assert assigned is not None
    record("scaled_1_to_3", committed_at_scale=at_scale,
           one_worker_partitions=len(next(iter(one.values()))) if one else None,
           rebalance_s=round(rebalanced_at - scaled_at, 1),
           three_members_seen_s=round(first_seen[3] - scaled_at, 1) if 3 in first_seen
           else None,
           partitions_per_worker=sorted(len(ps) for ps in assigned.values()),
           one_worker_changes_per_s=round(at_scale / max(scaled_at - first_commit_at, 0.1), 1),
           three_workers_changes_per_s=round((later - at_rebalance) / max(three_s, 0.1), 1),
           **figures)


@dataclass
class BrokerBehindProxy:
    """A broker the clients reach only through a TCP proxy of the test's own."""

    broker: int
    proxy: TcpProxy
    restart_s: float
    direct_port: int


@pytest.fixture
def broker_behind_proxy(cluster: LiveCluster, cluster_pipeline: Pipeline) -> Iterator[
        BrokerBehindProxy]:
    """The broker leading most of the test topic's partitions, restarted to advertise a
    proxy's port (clients follow advertised addresses, so every client, the workers' and
    the other brokers' replica fetchers, then reaches it only through the proxy; the
    controller quorum does not), leading its partitions again (preferred election); the
    pipeline's bootstrap list names the proxy instead of the broker. Restarted as before
    at the end."""
    layout = cluster.layout
    topic = cluster_pipeline.topic
    wait_until(lambda: leaders_or_none(layout.bootstrap, topic), 60,
               "the new topic's partitions to have leaders", every_s=0.5,
               accept=lambda got: got is not None and bool(got) and -1 not in got.values())
    victim = busiest_leader(layout.bootstrap, [topic])
    proxy = TcpProxy(layout.host, layout.kafka(victim))
    try:
        restart_s = cluster.restart_kafka(victim, proxy.port)
        cluster_pipeline.kafka = ",".join(
            f"{layout.host}:{proxy.port if i == victim else layout.kafka(i)}"
            for i in layout.indices)

        def leads() -> bool:
            elect_preferred_leaders(cluster_pipeline.kafka)
            got = leaders_or_none(cluster_pipeline.kafka, cluster_pipeline.topic) or {}
            return victim in got.values()

        wait_until(leads, 120, f"broker {victim} to lead partitions again", every_s=1,
                   retry_on=(KafkaError,))
        yield BrokerBehindProxy(victim, proxy, restart_s, layout.kafka(victim))
    finally:
        proxy.restore()
        cluster.restart_kafka(victim, None)
        proxy.close()
        with contextlib.suppress(KafkaError):
            elect_preferred_leaders(layout.bootstrap)


# A publish refused during the cut (its batch for the cut-off leader expired) leaves a
# kafka-python producer whose close timed out; its __del__ tries again and raises.
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <function KafkaProducer.__del__"
    ":pytest.PytestUnraisableExceptionWarning")
def test_broker_cut_off_by_a_network_partition_mid_replay_then_restored(
    cluster: LiveCluster, broker_behind_proxy: BrokerBehindProxy, replayed: Replayed,
    cluster_store: ElasticsearchStore, mozilla_expected: ExpectedIndex,
) -> None:
    total = len(replayed.events)
    behind = broker_behind_proxy
    proxy = behind.proxy
    topic = replayed.pipeline.topic
    replayed.start()
    replayed.start_reads(cluster.es_urls())
    at_cut = replayed.wait_committed(total // 4, "a quarter of the log indexed")
    before = partition_states(replayed.pipeline.kafka, topic)
    led = [p for p, (leader, _isr) in before.items() if leader == behind.broker]
    assert led, before
    # The workers reach the broker through the proxy only.
    peers = [tcp_peer_ports(worker.proc.pid) for worker in replayed.workers]
    assert not [p for p in peers if behind.direct_port in p], peers
    via_proxy = sum(1 for p in peers if proxy.port in p)
    assert via_proxy > 0, peers
    assert replayed.load is not None
    load = replayed.load
    versions_at_cut = load.realtime_versions

    cut_at = time.monotonic()
    proxy.cut()
    # The other brokers' partitions are still indexed while it is cut off.
    wait_until(lambda: load.realtime_versions, 120,
               "the real-time indexed versions to move on during the cut", every_s=0.5,
               accept=lambda v: v > versions_at_cut)
    progress_s = time.monotonic() - cut_at
    time.sleep(max(0.0, CUT_S - (time.monotonic() - cut_at)))
    # What the other brokers say of the partitions while it is cut off: its leaders stay
    # (it still reaches the controller quorum), so its partitions wait for the restore.
    during = partition_states_or_none(bootstrap_without(cluster, behind.broker), topic)
    versions_in_cut = load.realtime_versions - versions_at_cut
    refused = proxy.refused
    restore_at = time.monotonic()
    proxy.restore()

    figures = replayed.finish(cluster_store, mozilla_expected)
    figures.update(fault_window(replayed, cut_at, restore_at))
    record("broker_partitioned", broker=f"kafka-{behind.broker}", partitions_it_led=len(led),
           committed_at_cut=at_cut, proxy_restart_s=round(behind.restart_s, 1),
           workers_connected_via_proxy=via_proxy,
           connections_refused_during_cut=refused, cut_s=round(restore_at - cut_at, 1),
           indexing_moved_on_after_s=round(progress_s, 1),
           versions_indexed_during_cut=versions_in_cut,
           partitions_still_led_by_it_during_cut=None if during is None else sum(
               1 for leader, _ in during.values() if leader == behind.broker),
           leaders_and_isr_during_cut=during,
           **figures)
