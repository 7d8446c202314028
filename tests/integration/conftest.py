"""Fixtures for the service tests: a unique pipeline, the basecamp change log, a broker of
the test's own (to stop and start)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.index_equality import ExpectedIndex, expected_index
from support.kafka_admin import delete_topics
from support.own_broker import OwnBroker, own_broker_under
from support.workers import Pipeline

from events.changelog import read_changelog
from events.model import ChangeEvent
from store.elasticsearch import ElasticsearchStore
from transport.kafka import ensure_topics


@pytest.fixture
def pipeline(kafka_bootstrap: str, elasticsearch_url: str, unique: str) -> Iterator[Pipeline]:
    p = Pipeline(unique, kafka_bootstrap, elasticsearch_url)
    ensure_topics(kafka_bootstrap, [p.topic, p.dead_letter_topic], partitions=p.partitions)
    yield p
    delete_topics(kafka_bootstrap, [p.topic, p.dead_letter_topic])
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.delete_everything()
    store.close()


@pytest.fixture
def pipeline_store(pipeline: Pipeline) -> Iterator[ElasticsearchStore]:
    store = ElasticsearchStore.connect(pipeline.elasticsearch, pipeline.unique)
    yield store
    store.close()


@pytest.fixture(scope="session")
def basecamp_events(corpora_dir: Path) -> list[ChangeEvent]:
    return list(read_changelog(corpora_dir / "basecamp-policies.jsonl"))


@pytest.fixture(scope="session")
def basecamp_expected(basecamp_events: list[ChangeEvent]) -> ExpectedIndex:
    return expected_index(basecamp_events)


@pytest.fixture
def own_broker(tmp_path: Path, kafka_bootstrap: str) -> Iterator[OwnBroker]:
    """A broker of this test's own (after ``kafka_bootstrap`` answered: the jars are cached)."""
    with own_broker_under(tmp_path / "services") as broker:
        yield broker
