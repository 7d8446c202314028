"""Whole pipelines for the pipeline contract suite: embedded, and Kafka + Elasticsearch.

Each factory yields a ``PipelineUnderTest`` with a worker already running (a
thread of this process, the real chunker): publish events (or raw key/value
pairs, for poison), wait until every published event is committed, read the
index through the ``Store`` protocol and the dead letters back.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from consumers.commit_policy import CommitPolicy
from consumers.dead_letter import DeadLetter
from consumers.kafka_dead_letters import KafkaDeadLetterSink
from consumers.worker import Worker
from events.model import ChangeEvent
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from policy_indexer.runtime.backends import EmbeddedBackends
from policy_indexer.settings import Settings
from store.base import Store
from store.elasticsearch import ElasticsearchStore
from support.kafka_admin import delete_topics
from support.kafka_helpers import publish_events, read_all, wait_for_lag_zero
from support.waiting import wait_until
from transport.kafka import ProducerPolicy, ensure_topics
from transport.kafka_consumer import KafkaEventConsumer
from transport.kafka_producer import KafkaSender

Message = ChangeEvent | tuple[bytes, bytes | None]


@dataclass
class PipelineUnderTest:
    store: Store
    publish: Callable[[Sequence[Message]], None]
    wait_caught_up: Callable[[], None]
    dead_letter_reasons: Callable[[int], list[tuple[bytes | None, str]]]


@contextlib.contextmanager
def embedded_pipeline(request: pytest.FixtureRequest) -> Iterator[PipelineUnderTest]:
    tmp_path: Path = request.getfixturevalue("tmp_path")
    settings = Settings(embedded_dir=tmp_path / "data", commit_every_records=20)
    embedded = EmbeddedBackends.open(settings)
    worker = embedded.start_worker(WorkerMetrics.create(CollectorRegistry()))
    queue, topic = embedded.queue, embedded.topic

    def publish(messages: Sequence[Message]) -> None:
        queue.append(topic, [
            (m.document_id.encode(), m.to_json_bytes()) if isinstance(m, ChangeEvent) else m
            for m in messages
        ])

    def wait_caught_up() -> None:
        def pending() -> int:
            left = queue.pending(topic)
            assert not left or worker.alive(), f"the worker died: {worker.error!r}"
            return left

        wait_until(pending, 120, "every queued event to be committed", accept=lambda n: n == 0)

    def reasons(_expect: int) -> list[tuple[bytes | None, str]]:
        return [(d.key, d.reason) for d in queue.dead_letters(topic)]

    try:
        yield PipelineUnderTest(embedded.store, publish, wait_caught_up, reasons)
    finally:
        worker.stop()
        embedded.close()


@contextlib.contextmanager
def kafka_pipeline(request: pytest.FixtureRequest) -> Iterator[PipelineUnderTest]:
    bootstrap: str = request.getfixturevalue("kafka_bootstrap")
    es_url: str = request.getfixturevalue("elasticsearch_url")
    unique: str = request.getfixturevalue("unique")
    topic, dlq, group = f"{unique}-changes", f"{unique}-dlq", f"{unique}-group"
    ensure_topics(bootstrap, [topic, dlq], partitions=2)
    store = ElasticsearchStore.connect(es_url, unique)
    store.ensure_ready()
    sender = KafkaSender(bootstrap, ProducerPolicy())
    worker = Worker(
        KafkaEventConsumer.connect(bootstrap, group, topic, session_timeout_ms=6000),
        Indexer(store), KafkaDeadLetterSink(sender, dlq),
        metrics=WorkerMetrics.create(CollectorRegistry()),
        commit=CommitPolicy(max_records=20, max_interval_s=0.3), write_behind=True,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()

    def publish(messages: Sequence[Message]) -> None:
        publish_events(bootstrap, topic, messages)

    def alive() -> None:
        assert thread.is_alive(), "the Kafka worker thread died"

    def reasons(expect: int) -> list[tuple[bytes | None, str]]:
        records = read_all(bootstrap, dlq, expect=expect, timeout_s=15)
        return [(r.key, DeadLetter.read_headers(list(r.headers))["reason"]) for r in records]

    try:
        yield PipelineUnderTest(
            store, publish,
            lambda: wait_for_lag_zero(bootstrap, group, topic, timeout_s=180, check=alive),
            reasons,
        )
    finally:
        worker.request_stop()
        thread.join(timeout=30)
        sender.close()
        delete_topics(bootstrap, [topic, dlq])
        store.delete_everything()
        store.close()


PipelineFactory = Callable[
    [pytest.FixtureRequest], contextlib.AbstractContextManager[PipelineUnderTest]
]

PIPELINE_FACTORIES: list[object] = [
    pytest.param(embedded_pipeline, id="embedded"),
    pytest.param(kafka_pipeline, id="kafka-elasticsearch", marks=pytest.mark.services),
]
