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
QUESTIONS = ("privacy notice data retention", "terms of use account termination",
             "firefox sync data", "cookies and tracking", "refund policy")


@dataclass
class LiveCluster:
    """The running cluster's folders and ports, and the runner that manages its nodes."""

    cfg: Config
    layout: ClusterLayout

    def services(self, *args: str, timeout_s: float = 420) -> str:
        """``deploy/local/services ARGS --cluster``; its output, or AssertionError."""
        done = subprocess.run([str(RUNNER), *args, "--cluster"], capture_output=True,
                              text=True, timeout=timeout_s, check=False)
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
