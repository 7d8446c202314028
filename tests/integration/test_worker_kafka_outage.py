"""Kafka goes away mid-replay and comes back: the worker waits, says so, and loses nothing.

The broker stopped here is one this test starts for itself (``own_broker``:
``deploy/local/services`` on private ports and folder); the shared broker on
:9092 is never touched. The worker is a real ``policy-indexer run`` process
against that broker and the shared Elasticsearch.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.index_equality import ExpectedIndex, assert_index_equals
from support.kafka_admin import lag_or_none
from support.kafka_helpers import publish_events, read_all, wait_for_lag_zero
from support.own_broker import OwnBroker
from support.waiting import wait_until
from support.workers import Pipeline, free_port, healthz

from events.model import ChangeEvent
from store.elasticsearch import ElasticsearchStore
from transport.kafka import ensure_topics

pytestmark = [pytest.mark.services, pytest.mark.corpus, pytest.mark.slow]

OUTAGE_S = 18.0
FIRST_PART = 240  # of basecamp's 362 changes; the rest is published after the outage


@pytest.fixture
def private_pipeline(
    own_broker: OwnBroker, elasticsearch_url: str, unique: str
) -> Iterator[Pipeline]:
    """Topics on the test's own broker (gone with its folder), indices on the shared ES."""
    p = Pipeline(unique, own_broker.bootstrap, elasticsearch_url)
    ensure_topics(p.kafka, [p.topic, p.dead_letter_topic], partitions=p.partitions)
    yield p
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.delete_everything()
    store.close()


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
        text = resp.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def lag(pipeline: Pipeline) -> int | None:
    """The group's lag; None before its first commit, or while a fresh broker answers with
    a retriable error (no coordinator elected yet, still loading offsets, not the coordinator
    any more): every one of them means "not yet" (``support.kafka_admin.lag_or_none``)."""
    return lag_or_none(pipeline.kafka, pipeline.group, pipeline.topic)


KAFKA_ERRORS = ("policy_indexer_transient_errors_total", (("operation", "kafka"),))
RETRYING = ("policy_indexer_retrying", ())


def test_kafka_gone_for_18_seconds_mid_replay_the_worker_waits_and_loses_nothing(
    own_broker: OwnBroker, private_pipeline: Pipeline, tmp_path: Path,
    basecamp_events: list[ChangeEvent], basecamp_expected: ExpectedIndex,
) -> None:
    pipeline = private_pipeline
    port = free_port()
    worker = pipeline.start_worker(tmp_path, metrics_port=str(port), commit_every_records="20")
    try:
        publish_events(pipeline.kafka, pipeline.topic, basecamp_events[:FIRST_PART])
        def started() -> int | None:
            assert worker.proc.poll() is None, worker.tail()
            return lag(pipeline)

        # Mid-replay: the worker has committed part of the first batch of changes.
        wait_until(started, 60, "the worker to commit part of the first changes", every_s=0.2,
                   accept=lambda n: n not in (None, FIRST_PART), on_timeout=worker.tail)
        kafka_errors_before = scrape(port).get(KAFKA_ERRORS, 0.0)

        own_broker.services("down")
        down_at = time.monotonic()
        statuses: set[object] = set()
        retrying_seen = 0.0
        while time.monotonic() - down_at < OUTAGE_S:
            assert worker.proc.poll() is None, f"the worker exited: {worker.tail()}"
            statuses.add(healthz(port)["status"])
            retrying_seen = max(retrying_seen, scrape(port).get(RETRYING, 0.0))
            time.sleep(0.5)
        during = scrape(port)
        own_broker.services("up")

        assert "retrying" in statuses, statuses
        assert retrying_seen == 1.0
        assert during.get(KAFKA_ERRORS, 0.0) > kafka_errors_before

        publish_events(pipeline.kafka, pipeline.topic, basecamp_events[FIRST_PART:])
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic,
                          check=lambda: worker.proc.poll() is None or pytest.fail(worker.tail()))
        assert healthz(port)["status"] == "ok"
        assert worker.proc.poll() is None, worker.tail()
        assert worker.stop() == 0
    finally:
        worker.kill()
    assert_index_equals(ElasticsearchStore.connect(pipeline.elasticsearch, pipeline.unique),
                        basecamp_expected)
    assert read_all(pipeline.kafka, pipeline.dead_letter_topic, expect=0, timeout_s=1) == []
