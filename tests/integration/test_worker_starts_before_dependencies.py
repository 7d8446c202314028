"""A worker (or the scheduler) started before its dependencies answer stays up, not ready.

Under an orchestrator a pod whose broker is still starting (or
is away for maintenance) must not crash-loop; it must be alive (``/healthz``
200), not ready (``/readyz`` 503, status ``starting``, the reason), retry, and
become ready and index once the dependency answers. The broker stopped here is
the test's own (``own_broker``); Elasticsearch is reached through a proxy the
test holds cut (``TcpProxy``), so the shared services are never stopped.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.kafka_helpers import publish_events
from support.own_broker import OwnBroker
from support.reindex_library import Library
from support.tcp_proxy import TcpProxy
from support.waiting import wait_until
from support.workers import CLI, Pipeline, Worker, free_port, probe

from store.elasticsearch import ElasticsearchStore

pytestmark = [pytest.mark.services, pytest.mark.slow]

START_S = 120.0




def wait_not_ready_and_retrying(worker: Worker, port: int, reason_part: str) -> None:
    """/readyz 503 ``starting`` naming the dependency, after at least two tries; /healthz 200."""

    def state() -> tuple[int, dict[str, object]]:
        assert worker.proc.poll() is None, f"the worker exited: {worker.tail()}"
        return probe(port, "/readyz")

    _code, body = wait_until(
        state, START_S, "a /readyz 503 'starting' after two tries",
        accept=lambda r: r[0] == 503 and r[1].get("status") == "starting"
        and int(str(r[1].get("attempts", 0))) >= 2,
        every_s=0.2, on_timeout=worker.tail,
    )
    assert reason_part.lower() in str(body.get("last_error", "")).lower(), body
    assert probe(port, "/healthz")[0] == 200, "a worker waiting for its dependencies is alive"


def wait_ready(worker: Worker, port: int) -> None:
    def state() -> int:
        assert worker.proc.poll() is None, f"the worker exited: {worker.tail()}"
        return probe(port, "/readyz")[0]

    wait_until(state, START_S, "/readyz 200 once the dependency answers",
               accept=lambda code: code == 200, every_s=0.2, on_timeout=worker.tail)


def wait_indexed(store: ElasticsearchStore, document_id: str, version: int) -> None:
    def indexed() -> bool:
        state = store.get_state(document_id)
        return state is not None and state.version == version

    wait_until(indexed, START_S, f"{document_id} v{version} indexed", every_s=0.3)


@pytest.fixture
def es_store(elasticsearch_url: str, unique: str) -> Iterator[ElasticsearchStore]:
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    yield store
    store.delete_everything()
    store.close()


def test_kafka_down_at_start_the_worker_waits_not_ready_then_indexes(
    own_broker: OwnBroker, elasticsearch_url: str, unique: str, tmp_path: Path,
    es_store: ElasticsearchStore,
) -> None:
    own_broker.services("down")
    pipeline = Pipeline(unique, own_broker.bootstrap, elasticsearch_url)
    port = free_port()
    worker = pipeline.start_worker(tmp_path, metrics_port=str(port))
    try:
        wait_not_ready_and_retrying(worker, port, "kafka")
        own_broker.services("up")
        wait_ready(worker, port)  # it made the topics itself, then joined the group
        library = Library(tmp_path / "log.jsonl")
        publish_events(pipeline.kafka, pipeline.topic, [library.upsert("refunds", 1)])
        wait_indexed(es_store, "refunds", 1)
    finally:
        assert worker.stop() == 0, worker.tail()


@pytest.fixture
def cut_proxy(elasticsearch_url: str) -> Iterator[TcpProxy]:
    """A proxy to the shared Elasticsearch that refuses every connection until restored."""
    host, _, es_port = elasticsearch_url.removeprefix("http://").partition(":")
    proxy = TcpProxy(host, int(es_port))
    proxy.cut()
    yield proxy
    proxy.close()


def test_elasticsearch_away_at_start_the_worker_waits_not_ready_then_indexes(
    kafka_bootstrap: str, cut_proxy: TcpProxy, unique: str, tmp_path: Path,
    es_store: ElasticsearchStore,
) -> None:
    proxy = cut_proxy
    pipeline = Pipeline(unique, kafka_bootstrap, proxy.url)
    port = free_port()
    worker = pipeline.start_worker(tmp_path, metrics_port=str(port))
    try:
        wait_not_ready_and_retrying(worker, port, "elasticsearch")
        proxy.restore()
        wait_ready(worker, port)
        library = Library(tmp_path / "log.jsonl")
        publish_events(pipeline.kafka, pipeline.topic, [library.upsert("exchanges", 3)])
        wait_indexed(es_store, "exchanges", 3)
    finally:
        assert worker.stop() == 0, worker.tail()


def test_sigterm_while_waiting_for_kafka_exits_at_once(
    own_broker: OwnBroker, elasticsearch_url: str, unique: str, tmp_path: Path,
) -> None:
    own_broker.services("down")
    pipeline = Pipeline(unique, own_broker.bootstrap, elasticsearch_url)
    port = free_port()
    worker = pipeline.start_worker(tmp_path, metrics_port=str(port))
    wait_not_ready_and_retrying(worker, port, "kafka")
    assert worker.stop(timeout_s=20) == 0, worker.tail()


def test_the_scheduler_waits_not_ready_for_elasticsearch_then_serves(
    kafka_bootstrap: str, cut_proxy: TcpProxy, unique: str, tmp_path: Path,
    es_store: ElasticsearchStore,
) -> None:
    proxy = cut_proxy
    library = tmp_path / "library"
    library.mkdir()
    (library / "refunds.md").write_text("# Refunds\n\nWithin 30 days.\n")
    pipeline = Pipeline(unique, kafka_bootstrap, proxy.url)
    port = free_port()
    log = tmp_path / "scheduler.log"
    with log.open("w") as handle:
        proc = subprocess.Popen(
            [CLI, "scheduler"], stdout=handle, stderr=subprocess.STDOUT,
            env=pipeline.env(scheduler_metrics_port=str(port), source_kind="folder",
                             source_path=str(library)))
    scheduler = Worker(proc, log)
    try:
        wait_not_ready_and_retrying(scheduler, port, "elasticsearch")
        proxy.restore()
        wait_ready(scheduler, port)
        assert probe(port, "/healthz")[0] == 200
    finally:
        assert scheduler.stop() == 0, scheduler.tail()
