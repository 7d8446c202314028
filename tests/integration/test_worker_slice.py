"""The thinnest slice: change events from real Kafka become searchable chunks in real ES."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry
from support.chunks import fake_chunker
from support.kafka_admin import delete_topics
from support.kafka_helpers import publish_events, wait_for_lag_zero
from support.waiting import wait_until

from consumers.commit_policy import CommitPolicy
from consumers.kafka_dead_letters import KafkaDeadLetterSink
from consumers.visibility import VisibilityPolicy
from consumers.worker import Worker
from events.model import Action, ChangeEvent
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from store.elasticsearch import ElasticsearchStore
from transport.kafka import ProducerPolicy, ensure_topics
from transport.kafka_consumer import KafkaEventConsumer
from transport.kafka_producer import KafkaSender

pytestmark = pytest.mark.services


@pytest.fixture
def es_store(elasticsearch_url: str, unique: str) -> Iterator[ElasticsearchStore]:
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.ensure_ready()
    yield store
    store.delete_everything()
    store.close()


def test_an_event_from_kafka_becomes_a_searchable_chunk(
    kafka_bootstrap: str, es_store: ElasticsearchStore, unique: str
) -> None:
    topic, dlq, group = f"{unique}-changes", f"{unique}-dlq", f"{unique}-group"
    ensure_topics(kafka_bootstrap, [topic, dlq], partitions=2)
    registry = CollectorRegistry()
    metrics = WorkerMetrics.create(registry)
    sender = KafkaSender(kafka_bootstrap, ProducerPolicy())
    worker = Worker(
        KafkaEventConsumer.connect(kafka_bootstrap, group, topic),
        Indexer(es_store, chunk=fake_chunker),
        KafkaDeadLetterSink(sender, dlq),
        metrics=metrics,
        commit=CommitPolicy(max_records=1, max_interval_s=0.2),
        write_behind=True,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        when = datetime(2024, 3, 1, tzinfo=UTC)
        publish_events(kafka_bootstrap, topic, [
            ChangeEvent(event_id="e1", document_id="refund", action=Action.UPSERT, version=1,
                        changed_at=when, content_type="text/markdown",
                        content="Refunds within thirty days\n\nExceptions apply"),
            ChangeEvent(event_id="e2", document_id="refund", action=Action.UPSERT, version=2,
                        changed_at=when, content_type="text/markdown",
                        content="Refunds within sixty days"),
        ])
        wait_for_lag_zero(kafka_bootstrap, group, topic, timeout_s=60)
    finally:
        worker.request_stop()
        thread.join(timeout=30)
        sender.close()
        delete_topics(kafka_bootstrap, [topic, dlq])
    assert not thread.is_alive()
    es_store.refresh()
    hits = es_store.client.search(index=es_store.names.chunks, query={"match": {"text": "sixty"}})
    assert [h["_id"] for h in hits["hits"]["hits"]] == ["refund@v2#refunds"]
    assert [r.chunk_id for r in es_store.iter_chunks()] == ["refund@v2#refunds"]
    outcomes = {
        o: registry.get_sample_value("policy_indexer_events_total", {"outcome": o}) or 0
        for o in ("indexed", "skipped_stale")
    }
    # v1 is indexed, or skipped when v2 came in the same polled batch.
    assert outcomes["indexed"] >= 1 and sum(outcomes.values()) == 2


def test_a_document_over_kafkas_default_1_mb_limit_is_published_and_indexed(
    kafka_bootstrap: str, es_store: ElasticsearchStore, unique: str
) -> None:
    """Topics, producer and consumer are sized for 10 MB documents, not Kafka's 1 MB default."""
    from chunker import chunk_document

    topic, dlq, group = f"{unique}-changes", f"{unique}-dlq", f"{unique}-group"
    ensure_topics(kafka_bootstrap, [topic, dlq], partitions=1)
    sentence = "Refunds for annual plans are prorated to the day of cancellation. "
    content = "\n\n".join(
        f"## Section {i}\n\n" + sentence * 160 for i in range(300)
    )  # about 3.2 MB
    assert len(content.encode()) > 3_000_000
    sender = KafkaSender(kafka_bootstrap, ProducerPolicy())
    worker = Worker(
        KafkaEventConsumer.connect(kafka_bootstrap, group, topic),
        Indexer(es_store),
        KafkaDeadLetterSink(sender, dlq),
        metrics=WorkerMetrics.create(CollectorRegistry()),
        commit=CommitPolicy(max_records=1, max_interval_s=0.2),
        write_behind=True,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        publish_events(kafka_bootstrap, topic, [
            ChangeEvent(event_id="big", document_id="annual-terms", action=Action.UPSERT,
                        version=1, changed_at=datetime(2024, 3, 1, tzinfo=UTC),
                        content_type="text/markdown", content=content),
        ])
        wait_for_lag_zero(kafka_bootstrap, group, topic, timeout_s=120)
    finally:
        worker.request_stop()
        thread.join(timeout=30)
        sender.close()
        delete_topics(kafka_bootstrap, [topic, dlq])
    es_store.refresh()
    expected = {c.chunk_id for c in chunk_document("annual-terms", 1, content)}
    assert len(expected) >= 300
    assert {r.chunk_id for r in es_store.iter_chunks()} == expected


@pytest.mark.parametrize("refresh", [True, False], ids=["refresh-when-caught-up", "never"])
def test_a_caught_up_worker_makes_its_change_searchable_without_the_indexs_refresh(
    kafka_bootstrap: str, es_store: ElasticsearchStore, unique: str, refresh: bool,
) -> None:
    """With the index's own refresh off, only the worker's refresh after a short batch
    (``consumers.visibility``) makes the change visible to a search."""
    es_store.client.indices.put_settings(index=es_store.names.chunks,
                                         settings={"index": {"refresh_interval": "-1"}})
    topic, dlq, group = f"{unique}-changes", f"{unique}-dlq", f"{unique}-group"
    ensure_topics(kafka_bootstrap, [topic, dlq], partitions=1)
    sender = KafkaSender(kafka_bootstrap, ProducerPolicy())
    worker = Worker(
        KafkaEventConsumer.connect(kafka_bootstrap, group, topic),
        Indexer(es_store, chunk=fake_chunker),
        KafkaDeadLetterSink(sender, dlq),
        metrics=WorkerMetrics.create(CollectorRegistry()),
        commit=CommitPolicy(max_records=1, max_interval_s=0.2),
        visibility=VisibilityPolicy() if refresh else VisibilityPolicy(min_interval_s=None),
    )
    thread = threading.Thread(target=worker.run)
    thread.start()

    def sixty() -> int:
        hits = es_store.client.search(index=es_store.names.chunks,
                                      query={"match": {"text": "sixty"}})
        return len(hits["hits"]["hits"])

    try:
        publish_events(kafka_bootstrap, topic, [
            ChangeEvent(event_id="e1", document_id="refund", action=Action.UPSERT, version=1,
                        changed_at=datetime(2024, 3, 1, tzinfo=UTC),
                        content_type="text/markdown", content="Refunds within sixty days"),
        ])
        if refresh:
            wait_until(sixty, 60, "the change to be searchable")
        else:
            wait_for_lag_zero(kafka_bootstrap, group, topic, timeout_s=60)
            assert sixty() == 0, "searchable although nothing refreshed the index"
    finally:
        worker.request_stop()
        thread.join(timeout=30)
        sender.close()
        delete_topics(kafka_bootstrap, [topic, dlq])
    assert not thread.is_alive()
