"""A blocked chunks index is waited for, on Kafka + Elasticsearch.

The real worker (``policy-indexer run``, Kafka mode) against the shared Elasticsearch, on
indices of this test's own prefix. Its chunks index gets a block while events arrive:

- ``read_only_allow_delete``: what Elasticsearch itself sets at the flood-stage disk
  watermark (429 ``cluster_block_exception`` on every bulk item);
- ``write``: an operator's write block (403 ``cluster_block_exception``). Before this
  change a blocked bulk item read as the document refused: every event became a dead
  letter ``rejected``.

Either way the worker backs off (``/readyz`` 503, ``waiting_for: store``, the block in
``last_error``), dead-letters nothing, and once the block is cleared indexes every event
at its version.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from support.kafka_helpers import publish_events, read_all, wait_for_lag_zero
from support.waiting import wait_until
from support.workers import Pipeline, free_port, healthz

from events.model import Action, ChangeEvent
from store.elasticsearch import ElasticsearchStore

pytestmark = [pytest.mark.services, pytest.mark.slow]

DOCUMENTS = 12


def event(i: int, version: int) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"blocked-{i}-{version}", document_id=f"blocked/doc-{i:02d}",
        action=Action.UPSERT, version=version, changed_at=datetime(2026, 1, version, tzinfo=UTC),
        content_type="text/markdown",
        content=f"# Doc {i}\n\n## Rule\n\nRiders may ask within {version} days.\n",
    )


def block(es: str, index: str, setting: str, value: bool | None) -> None:
    answer = httpx.put(f"{es}/{index}/_settings", json={f"index.blocks.{setting}": value},
                       timeout=10)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("setting", ["read_only_allow_delete", "write"])
def test_a_blocked_chunks_index_is_waited_for_and_nothing_is_dead_lettered(
    pipeline: Pipeline, pipeline_store: ElasticsearchStore, tmp_path: Path, setting: str,
) -> None:
    port = free_port()
    worker = pipeline.start_worker(tmp_path, metrics_port=str(port), retry_initial_seconds="0.1",
                                   retry_max_seconds="0.5", commit_every_records="5")
    chunks = f"{pipeline.unique}-chunks"

    def alive() -> None:
        assert worker.proc.poll() is None, worker.tail()

    try:
        publish_events(pipeline.kafka, pipeline.topic, [event(0, 1)])
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic, timeout_s=60,
                          check=alive)
        block(pipeline.elasticsearch, chunks, setting, True)
        try:
            publish_events(pipeline.kafka, pipeline.topic,
                           [event(i, v) for v in (2, 3) for i in range(DOCUMENTS)])
            body = wait_until(
                lambda: healthz(port), 60, "the worker to wait for the blocked index",
                every_s=0.1,
                accept=lambda b: b.get("waiting_for") == "store"
                and int(str(b.get("attempts", 0))) >= 5,
                on_timeout=worker.tail)
            assert body["status"] == "retrying", body
            assert "index blocked" in str(body["last_error"]), body
            assert "StoreUnavailableError" in str(body["last_error"]), body
            assert read_all(pipeline.kafka, pipeline.dead_letter_topic, expect=0,
                            timeout_s=1) == []
        finally:
            block(pipeline.elasticsearch, chunks, setting, None)
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic, timeout_s=60,
                          check=alive)
        assert healthz(port)["status"] == "ok"
        assert worker.stop() == 0
    finally:
        worker.kill()
    states = {s.document_id: s.version for s in pipeline_store.iter_states()}
    assert states == {f"blocked/doc-{i:02d}": 3 for i in range(DOCUMENTS)}
    assert read_all(pipeline.kafka, pipeline.dead_letter_topic, expect=0, timeout_s=1) == []
