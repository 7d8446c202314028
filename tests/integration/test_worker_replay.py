"""A corpus replayed through Kafka into worker processes leaves exactly the final state."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support.index_equality import ExpectedIndex, assert_index_equals
from support.kafka_admin import group_lag
from support.kafka_helpers import publish_events, read_all, wait_for_lag_zero
from support.waiting import wait_until
from support.workers import Pipeline, Worker

from events.model import ChangeEvent
from store.elasticsearch import ElasticsearchStore

pytestmark = [pytest.mark.services, pytest.mark.corpus, pytest.mark.slow]


def alive(workers: list[Worker]) -> None:
    for w in workers:
        assert w.proc.poll() is None, f"worker exited with {w.proc.returncode}:\n{w.tail()}"


def test_basecamp_replayed_into_two_workers_equals_the_library(
    pipeline: Pipeline, pipeline_store: ElasticsearchStore, corpora_dir: Path, tmp_path: Path,
    basecamp_expected: ExpectedIndex,
) -> None:
    workers = [pipeline.start_worker(tmp_path) for _ in range(2)]
    try:
        log = str(corpora_dir / "basecamp-policies.jsonl")
        replay = pipeline.cli("replay", log, "--to", "kafka")
        assert replay.returncode == 0, replay.stderr
        assert "published 362 changes" in replay.stdout
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic,
                          check=lambda: alive(workers))
        assert [w.stop() for w in workers] == [0, 0]
    finally:
        for w in workers:
            w.kill()
    assert_index_equals(pipeline_store, basecamp_expected)
    assert read_all(pipeline.kafka, pipeline.dead_letter_topic, expect=0, timeout_s=1) == []


def test_every_event_twice_and_out_of_order_gives_the_same_state(
    pipeline: Pipeline, pipeline_store: ElasticsearchStore, tmp_path: Path,
    basecamp_events: list[ChangeEvent], basecamp_expected: ExpectedIndex,
) -> None:
    # Each event twice; documents interleaved in a random order; one document's
    # changes may even arrive out of version order (the guard skips the older).
    stream = basecamp_events * 2
    random.Random(4).shuffle(stream)
    workers = [pipeline.start_worker(tmp_path) for _ in range(2)]
    try:
        assert publish_events(pipeline.kafka, pipeline.topic, stream) == 724
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic,
                          check=lambda: alive(workers))
        assert [w.stop() for w in workers] == [0, 0]
    finally:
        for w in workers:
            w.kill()
    assert_index_equals(pipeline_store, basecamp_expected)
    assert read_all(pipeline.kafka, pipeline.dead_letter_topic, expect=0, timeout_s=1) == []


def test_workers_joining_and_leaving_mid_replay_give_the_same_state(
    pipeline: Pipeline, pipeline_store: ElasticsearchStore, tmp_path: Path,
    basecamp_events: list[ChangeEvent], basecamp_expected: ExpectedIndex,
) -> None:
    thirds = [basecamp_events[:120], basecamp_events[120:240], basecamp_events[240:]]
    first = pipeline.start_worker(tmp_path, commit_every_records="10")
    second: Worker | None = None
    try:
        publish_events(pipeline.kafka, pipeline.topic, thirds[0])

        def lag() -> int | None:
            alive([first])
            return group_lag(pipeline.kafka, pipeline.group, pipeline.topic)

        wait_until(lag, 60, "the first worker to commit part of the first third", every_s=0.2,
                   accept=lambda n: n not in (None, 120))
        second = pipeline.start_worker(tmp_path, commit_every_records="10")  # joins: rebalance
        publish_events(pipeline.kafka, pipeline.topic, thirds[1])
        lag_when_leaving = group_lag(pipeline.kafka, pipeline.group, pipeline.topic)
        assert first.stop() == 0  # leaves mid-work: revoked partitions commit what is done
        assert lag_when_leaving
        publish_events(pipeline.kafka, pipeline.topic, thirds[2])
        remaining = second
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic,
                          check=lambda: alive([remaining]))
        assert second.stop() == 0
    finally:
        first.kill()
        if second is not None:
            second.kill()
    assert_index_equals(pipeline_store, basecamp_expected)
