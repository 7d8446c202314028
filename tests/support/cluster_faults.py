"""Faults on the replicated loopback cluster (``deploy/local/services up --cluster``).

What the fault tests share: the cluster's nodes (kill -9 one, start it again through the
runner), a change log replayed through the producer in batches while workers index it
(a refused batch is sent again, as a CMS retries), searches and state reads running all
along (each failure counted, each document's indexed version watched so that it never
goes back), and the figures each test writes to ``.local/cluster-faults.jsonl``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from devservices import health, process
from devservices.cluster import ClusterLayout
from devservices.config import Config
from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError

from events.model import ChangeEvent
from retrieval.models import SearchRequest
from retrieval.service import SearchService
from store.elasticsearch import ElasticsearchStore
from store.es_search import ElasticsearchSearchIndex
from store.model import DocumentState
from support.kafka_admin import lag_or_none
from support.kafka_helpers import publish_events

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNNER = REPO_ROOT / "deploy" / "local" / "services"
FIGURES = REPO_ROOT / ".local" / "cluster-faults.jsonl"
# deploy/local/devservices/cluster.py: a broker that advertises a proxy's port
ADVERTISED_PORTS = "POLICY_INDEXER_LOCAL_CLUSTER_KAFKA_ADVERTISED_PORTS"
QUESTIONS = ("privacy notice data retention", "terms of use account termination",
             "firefox sync data", "cookies and tracking", "refund policy")


@dataclass
class LiveCluster:
    """The running cluster's folders and ports, and the runner that manages its nodes."""

    cfg: Config
    layout: ClusterLayout

    def services(self, *args: str, timeout_s: float = 420,
                 env: dict[str, str] | None = None) -> str:
        """``deploy/local/services ARGS --cluster``; its output, or AssertionError."""
        done = subprocess.run([str(RUNNER), *args, "--cluster"], capture_output=True,
                              text=True, timeout=timeout_s, check=False, env=env)
        assert done.returncode == 0, f"services {' '.join(args)} --cluster:\n" \
            f"{done.stdout}{done.stderr}"
        return done.stdout

    def pid(self, node: str) -> int:
        pid = process.read_pid(self.cfg.state_dir / node / f"{node}.pid")
        assert pid is not None, f"{node} has no pid file: is the cluster up?"
        return int(pid)

    def kill9(self, node: str) -> float:
        """SIGKILL the node's whole process group; return when its port is closed."""
        pid = self.pid(node)
        os.killpg(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        port = self.layout.port_of(node)
        deadline = killed_at + 30
        while health.port_open(self.layout.host, port) or process.alive(
                pid, "kafka.Kafka" if node.startswith("kafka") else "org.elasticsearch"):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            assert time.monotonic() < deadline, f"{node} (pid {pid}) still runs after SIGKILL"
            time.sleep(0.05)
        return killed_at

    def start(self, *nodes: str) -> None:
        self.services("up", *nodes)

    def es_urls(self) -> list[str]:
        return list(self.layout.es_urls)

    def restart_kafka(self, broker: int, advertised_port: int | None = None) -> float:
        """Stop broker ``broker`` cleanly and start it again advertising ``advertised_port``
        (a proxy in front of it) or, with None, its own port; the seconds it took."""
        env = {k: v for k, v in os.environ.items() if k != ADVERTISED_PORTS}
        if advertised_port is not None:
            env[ADVERTISED_PORTS] = f"{broker}={advertised_port}"
        started = time.monotonic()
        self.services("down", f"kafka-{broker}", env=env)
        self.services("up", f"kafka-{broker}", env=env)
        return time.monotonic() - started


# Kafka --------------------------------------------------------------------------------


def leaders(bootstrap: str, topic: str) -> dict[int, int]:
    """partition -> leader broker id (-1 while it has none)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=5000)
    try:
        (described,) = admin.describe_topics([topic])
    finally:
        admin.close()
    return {int(p["partition_index"]): int(p["leader_id"]) for p in described["partitions"]}


def leaders_or_none(bootstrap: str, topic: str) -> dict[int, int] | None:
    try:
        return leaders(bootstrap, topic)
    except KafkaError:
        return None


def partition_states(bootstrap: str, topic: str) -> dict[int, tuple[int, int]]:
    """partition -> (leader broker id, in-sync replicas), from one Metadata answer of a
    broker of ``bootstrap`` (no other broker is asked: it works with one cut off)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=None,
                             request_timeout_ms=5000)
    try:
        partitions = consumer.partitions_for_topic(topic) or set()
        known = consumer._client.cluster._partitions[topic]  # the ISR has no public getter
        return {int(p): (int(known[p].leader_id), len(known[p].isr_nodes))
                for p in sorted(partitions)}
    finally:
        consumer.close()


def partition_states_or_none(bootstrap: str, topic: str,
                             tries: int = 5) -> dict[int, tuple[int, int]] | None:
    """``partition_states``, tried a few times: once it knows the brokers the client may ask
    any of them, the one cut off too (a figure, not a check: None when none answered)."""
    for _ in range(tries):
        with contextlib.suppress(KafkaError):
            return partition_states(bootstrap, topic)
    return None


def elect_preferred_leaders(bootstrap: str) -> None:
    """A preferred leader election on every partition (what Kafka's own leader rebalance
    does every 5 minutes): a broker just restarted leads its partitions again."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=30000)
    try:
        admin.elect_leaders(0, None, timeout_ms=30000, raise_errors=False)
    finally:
        admin.close()


def group_assignment(bootstrap: str, group: str, topic: str,
                     joined: list[int] | None = None) -> dict[str, list[int]] | None:
    """member id -> the partitions of ``topic`` assigned to it (None while Kafka cannot say,
    or while the group is rebalancing). ``joined`` gets the number of
    the group's members, in any state."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), request_timeout_ms=5000)
    try:
        described = admin.describe_groups([group])[group]
    except KafkaError:
        return None
    finally:
        admin.close()
    if joined is not None:
        joined.append(len(described.get("members") or ()))
    if described.get("group_state") != "Stable":
        return None
    return {member["member_id"]: sorted(p for assigned in
                                        member["member_assignment"]["assigned_partitions"]
                                        if assigned["topic"] == topic
                                        for p in assigned["partitions"])
            for member in described["members"]}


def busiest_leader(bootstrap: str, topics: Sequence[str]) -> int:
    """The broker id that leads the most partitions of ``topics``."""
    count: Counter[int] = Counter()
    for topic in topics:
        count.update(leaders(bootstrap, topic).values())
    return count.most_common(1)[0][0]


def committed(bootstrap: str, group: str, topic: str, total: int) -> int | None:
    """Records of ``topic`` the group has committed (None while Kafka cannot say)."""
    lag = lag_or_none(bootstrap, group, topic)
    return None if lag is None else total - lag


def tcp_peer_ports(pid: int) -> Counter[int]:
    """Remote ports of the TCP sockets process ``pid`` holds (from /proc), by count."""
    inodes = set()
    fds = Path(f"/proc/{pid}/fd")
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    ports: Counter[int] = Counter()
    for table in ("tcp", "tcp6"):
        lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            if fields[9] in inodes:
                ports[int(fields[2].rsplit(":", 1)[1], 16)] += 1
    return ports


# Elasticsearch --------------------------------------------------------------------------


def es_json(url: str, path: str) -> Any:
    return health.http_json(f"{url}{path}", timeout=5.0)


def primaries_by_node(urls: Sequence[str], index_pattern: str) -> Counter[str]:
    """node name -> primary shards of the indices matching ``index_pattern`` it holds."""
    for url in urls:
        try:
            shards = es_json(url, f"/_cat/shards/{index_pattern}?format=json")
        except OSError:
            continue
        return Counter(s["node"] for s in shards if s["prirep"] == "p" and s.get("node"))
    raise AssertionError("no Elasticsearch node answered _cat/shards")


def cluster_health(urls: Sequence[str]) -> str | None:
    for url in urls:
        with contextlib.suppress(OSError, ValueError):
            return str(es_json(url, "/_cluster/health?timeout=2s")["status"])
    return None


# Load during the fault ------------------------------------------------------------------


@dataclass
class Reads:
    """What searches and state reads met, with the time of each failure."""

    searches: int = 0
    search_failures: list[float] = field(default_factory=list)
    state_scans: int = 0
    state_failures: list[float] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)  # real-time reads (mget)
    # Searches over the states: a replica refreshed later than its primary can show an
    # older version for a moment (reported, not a regression of the index).
    search_view_regressions: list[str] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)

    def failed_between(self, start: float, end: float) -> int:
        return sum(1 for t in self.search_failures if start <= t <= end)


class ReadLoad(threading.Thread):
    """Searches (keyword leg, every node of the cluster in the client) and, once a second,
    a real-time read (mget, what the version guard reads) of every document's state and a
    search over all states, until stopped. A search or read that raises is a failure,
    counted with its time; a document whose real-time indexed version is lower than one
    read before is a regression."""

    def __init__(self, urls: Sequence[str], prefix: str, document_ids: Sequence[str]) -> None:
        super().__init__(daemon=True, name="cluster-read-load")
        self.store = ElasticsearchStore.connect(list(urls), prefix, timeout_s=5)
        self.service = SearchService(ElasticsearchSearchIndex(self.store), None)
        self.reads = Reads()
        self.searches_at: list[float] = []
        self.document_ids = list(document_ids)
        self.seen: dict[str, int] = {}
        self.realtime_versions = 0  # the sum of the versions the last real-time read saw
        self.seen_by_search: dict[str, int] = {}
        self._halt = threading.Event()

    def run(self) -> None:
        i = 0
        next_scan = 0.0
        while not self._halt.is_set():
            question = QUESTIONS[i % len(QUESTIONS)]
            i += 1
            try:
                self.service.search(SearchRequest(question=question), frozenset({"public"}))
            except Exception as exc:
                self.reads.search_failures.append(time.monotonic())
                self.reads.errors[type(exc).__name__] += 1
            self.reads.searches += 1
            self.searches_at.append(time.monotonic())
            if time.monotonic() >= next_scan:
                next_scan = time.monotonic() + 1.0
                self._scan()
            self._halt.wait(0.05)

    def _scan(self) -> None:
        try:
            realtime = self.store.get_states(self.document_ids)
            searched = list(self.store.iter_states())
        except Exception as exc:
            self.reads.state_failures.append(time.monotonic())
            self.reads.errors[type(exc).__name__] += 1
            return
        self.reads.state_scans += 1
        self.realtime_versions = sum(state.version for state in realtime.values())
        _watch(realtime.values(), self.seen, self.reads.regressions)
        _watch(searched, self.seen_by_search, self.reads.search_view_regressions)

    def stop(self) -> Reads:
        self._halt.set()
        self.join(timeout=60)
        self.service.close()
        self.store.close()
        return self.reads

    def searches_between(self, start: float, end: float) -> int:
        return sum(1 for t in self.searches_at if start <= t <= end)


def _watch(states: Iterable[DocumentState], seen: dict[str, int], regressions: list[str]) -> None:
    for state in states:
        before = seen.get(state.document_id, 0)
        if state.version < before:
            regressions.append(f"{state.document_id}: v{before} -> v{state.version}")
        seen[state.document_id] = max(before, state.version)


class Replay(threading.Thread):
    """Publish ``events`` through the producer in batches; a batch the cluster refuses (no
    leader, not enough in-sync replicas, a timeout) is sent again after a second, as a CMS
    retries. Redelivery is harmless: chunk ids carry the version."""

    def __init__(self, bootstrap: str, topic: str, events: Sequence[ChangeEvent],
                 batch: int = 50) -> None:
        super().__init__(daemon=True, name="cluster-replay")
        self.bootstrap, self.topic, self.events, self.batch = bootstrap, topic, events, batch
        self.published = 0
        self.retries = 0
        self.error: BaseException | None = None
        self.done_at: float | None = None

    def run(self) -> None:
        try:
            for start in range(0, len(self.events), self.batch):
                part = self.events[start:start + self.batch]
                deadline = time.monotonic() + 300
                while True:
                    try:
                        publish_events(self.bootstrap, self.topic, part)
                        break
                    except Exception:
                        self.retries += 1
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(1)
                self.published += len(part)
            self.done_at = time.monotonic()
        except BaseException as exc:
            self.error = exc


def record(test: str, **figures: Any) -> dict[str, Any]:
    """Append the test's figures to ``.local/cluster-faults.jsonl`` and return them."""
    row = {"test": test, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **figures}
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    with FIGURES.open("a") as fh:
        fh.write(json.dumps(row, default=_plain) + "\n")
    print(f"\n[cluster figures] {json.dumps(row, default=_plain)}")
    return row


def _plain(value: object) -> object:
    if isinstance(value, Counter):
        return dict(value)
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)  # type: ignore[call-overload]
    return str(value)
