"""The replicated cluster for the fault tests, and a pipeline on it per test.

The cluster (3 Kafka brokers, 3 Elasticsearch nodes: ``deploy/local/services up
--cluster``) is started by the session when it is not already formed, and stopped at
the end of the session that started it; a CI stage that started it itself keeps it (and
stops it). The tests here run only when asked for (``-m cluster``): a plain ``pytest``
(the main suite) deselects them, since the cluster takes minutes to start on 2 cores.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from devservices.cluster import Cluster, load_cluster
from devservices.config import load_config
from support.cluster_faults import LiveCluster
from support.index_equality import ExpectedIndex, expected_index
from support.kafka_admin import delete_topics
from support.workers import Pipeline

from events.changelog import read_changelog
from events.model import ChangeEvent
from store.elasticsearch import ElasticsearchStore
from transport.kafka import ensure_topics

# The change log every fault test replays: the first changes of the Mozilla library.
CHANGES = 2_000
PARTITIONS = 6


# kafka-python 3.0 leaks the socket of each refused reconnect while a broker is down or cut
# off, and a producer whose close timed out (a batch refused during a cut) goes on
# reconnecting in its own thread. The cluster tests' modules ignore those warnings; a socket
# the garbage collector finds between tests or while the session ends would otherwise fail
# the whole run (``filterwarnings = error``) after every test passed (seen: 60 of them).
LEAKED_SOCKETS = (
    "ignore:unclosed <socket.socket:ResourceWarning",
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning",
)


def pytest_configure(config: pytest.Config) -> None:
    if "cluster" in (config.getoption("markexpr") or ""):
        for line in LEAKED_SOCKETS:
            config.addinivalue_line("filterwarnings", line)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "cluster" in (config.getoption("markexpr") or ""):
        return
    skipped = [item for item in items if item.get_closest_marker("cluster")]
    if skipped:
        config.hook.pytest_deselected(items=skipped)
        items[:] = [item for item in items if not item.get_closest_marker("cluster")]


@pytest.fixture(scope="session")
def cluster() -> Iterator[LiveCluster]:
    cfg, layout = load_cluster(os.environ, load_config(os.environ))
    live = LiveCluster(cfg, layout)
    nodes = Cluster(cfg, layout)
    formed = all(nodes.runner._running_pid(s) is not None for s in nodes.services.values())
    formed = formed and not nodes.problems()
    if not formed:
        live.services("up")
    yield live
    if not formed:
        live.services("down")


@pytest.fixture(scope="session")
def mozilla_events(corpora_dir: Path) -> list[ChangeEvent]:
    events: list[ChangeEvent] = []
    for event in read_changelog(corpora_dir / "mozilla-legal-docs.jsonl.gz"):
        events.append(event)
        if len(events) == CHANGES:
            break
    return events


@pytest.fixture(scope="session")
def mozilla_expected(mozilla_events: list[ChangeEvent]) -> ExpectedIndex:
    return expected_index(mozilla_events)


@pytest.fixture
def cluster_pipeline(cluster: LiveCluster, unique: str) -> Iterator[Pipeline]:
    """Topics at replication factor 3 and min.insync.replicas=2, indices with 1 replica,
    every broker and node in the clients' lists."""
    layout = cluster.layout
    p = Pipeline(unique, layout.bootstrap, layout.es_urls[0], partitions=PARTITIONS, extra={
        "POLICY_INDEXER_ELASTICSEARCH_URLS": ",".join(layout.es_urls),
        "POLICY_INDEXER_INDEX_REPLICAS": "1",
        "POLICY_INDEXER_KAFKA_REPLICATION_FACTOR": "3",
        "POLICY_INDEXER_KAFKA_MIN_INSYNC_REPLICAS": "2",
    })
    ensure_topics(layout.bootstrap, [p.topic, p.dead_letter_topic], partitions=PARTITIONS,
                  replication_factor=3, min_insync_replicas=2)
    yield p
    delete_topics(layout.bootstrap, [p.topic, p.dead_letter_topic])
    store = ElasticsearchStore.connect(layout.es_urls, unique)
    store.delete_everything()
    store.close()


@pytest.fixture
def cluster_store(cluster_pipeline: Pipeline, cluster: LiveCluster) -> Iterator[
        ElasticsearchStore]:
    store = ElasticsearchStore.connect(cluster.layout.es_urls, cluster_pipeline.unique)
    yield store
    store.close()
