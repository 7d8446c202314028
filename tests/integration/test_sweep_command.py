"""The sweep on real Elasticsearch: removes planted leftovers, leaves a clean index, and says so.

By hand (`policy-indexer sweep`: printed and logged) and on a schedule (the job the
scheduler and the embedded run use: counted in their /metrics).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from support.chunks import make_chunk
from support.index_equality import assert_index_equals, expected_index
from support.workers import Pipeline

from events.model import Action, ChangeEvent
from indexing.core import Indexer
from metrics.definitions import ReindexMetrics
from policy_indexer.runtime.backends import KafkaBackends
from policy_indexer.runtime.jobs import job_runner
from policy_indexer.settings import Settings
from sources.changelog import ChangeLogSource
from store.elasticsearch import ElasticsearchStore

pytestmark = pytest.mark.services

WHEN = datetime(2024, 4, 1, tzinfo=UTC)


def event(doc: str, version: int, content: str | None) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{doc}:{version}", document_id=doc, version=version, changed_at=WHEN,
        action=Action.UPSERT if content is not None else Action.DELETE,
        content_type="text/markdown" if content is not None else None, content=content,
    )


def plant(store: ElasticsearchStore, doc: str, version: int, indexed_at: str) -> str:
    chunk = make_chunk(doc, version, "planted")
    store.client.index(
        index=store.names.chunks, id=chunk.chunk_id,
        document={**chunk.model_dump(mode="json"), "indexed_at": indexed_at},
    )
    return chunk.chunk_id


STREAM = [
    event("refund", 1, "# Refund\n\nThirty days.\n"),
    event("refund", 2, "# Refund\n\nSixty days.\n\n## Exceptions\n\nNone.\n"),
    event("terms", 1, "# Terms\n\nBe nice.\n"),
    event("old-name", 1, "# Old\n\nRenamed soon.\n"),
    event("old-name", 2, None),
]
LONG_AGO = "2020-01-01T00:00:00+00:00"


def index_with_leftovers(store: ElasticsearchStore) -> tuple[dict[str, str], str]:
    """STREAM indexed, then one leftover of each kind planted, and one chunk in its grace."""
    store.ensure_ready()
    processor = Indexer(store)
    for e in STREAM:
        processor.apply_one(e)
    planted = {
        plant(store, "refund", 1, LONG_AGO): "older",
        plant(store, "old-name", 1, LONG_AGO): "deleted-document",
        plant(store, "terms", 5, LONG_AGO): "above-current",
        plant(store, "never-seen", 3, LONG_AGO): "unknown-document",
    }
    young = plant(store, "terms", 6, datetime.now(UTC).isoformat())  # being written now
    return planted, young


def test_sweep_removes_planted_leftovers_and_then_has_nothing_to_do(
    pipeline: Pipeline, pipeline_store: ElasticsearchStore
) -> None:
    store = pipeline_store
    planted, young = index_with_leftovers(store)
    expected = expected_index(STREAM)

    out = pipeline.cli("sweep", "--grace-seconds", "600", log_level="INFO")
    assert out.returncode == 0, out.stderr
    for reason in set(planted.values()):
        assert f"  {reason}: 1" in out.stdout
    assert "deleted 4 chunks" in out.stdout
    assert "kept 1 chunks younger than the grace period" in out.stdout
    logged = [json.loads(line) for line in out.stderr.splitlines() if "sweep finished" in line]
    assert len(logged) == 1, out.stderr
    assert logged[0]["leftovers"] == {reason: 1 for reason in planted.values()}
    assert (logged[0]["deleted"], logged[0]["kept_in_grace"]) == (4, 1)
    store.delete_chunks([young])
    assert_index_equals(store, expected)

    again = pipeline.cli("sweep", "--grace-seconds", "600")
    assert again.returncode == 0, again.stderr
    assert "no leftovers: nothing to do" in again.stdout
    assert "deleted 0 chunks" in again.stdout
    assert_index_equals(store, expected)


def test_the_scheduled_sweep_counts_its_leftovers_in_the_process_metrics(
    pipeline: Pipeline, pipeline_store: ElasticsearchStore, tmp_path: Path
) -> None:
    """The job ``policy-indexer scheduler`` and the embedded run serve on /metrics."""
    planted, young = index_with_leftovers(pipeline_store)
    source = tmp_path / "changes.jsonl"  # the runner needs a source; the sweep never reads it
    source.write_text("")
    settings = Settings(pipeline="kafka", elasticsearch_url=pipeline.elasticsearch,
                        index_prefix=pipeline.unique, source_kind="changelog",
                        source_path=str(source), sweep_grace_seconds=600)
    registry = CollectorRegistry()
    store = ElasticsearchStore.connect(pipeline.elasticsearch, pipeline.unique)
    changes = ChangeLogSource(str(source))

    def close() -> None:
        changes.close()
        store.close()

    runner = job_runner(KafkaBackends(settings, store), changes, trigger="scheduled",
                        metrics=ReindexMetrics.create(registry), on_close=close)

    def leftovers(reason: str) -> float | None:
        return registry.get_sample_value("policy_indexer_sweep_leftovers_total",
                                         {"reason": reason})

    try:
        assert {leftovers(r) for r in planted.values()} == {0.0}  # the series exist from start
        first = runner.sweep()
        assert first is not None and first.deleted == 4
        assert {r: leftovers(r) for r in planted.values()} == {r: 1.0 for r in planted.values()}
        pipeline_store.delete_chunks([young])
        runner.spacing = None  # the next occurrence, as if an hour had passed
        again = runner.sweep()  # a clean index: the counters do not move
        assert again is not None and again.total_leftovers == 0
        assert {r: leftovers(r) for r in planted.values()} == {r: 1.0 for r in planted.values()}
    finally:
        runner.close()
        pipeline_store.client.options(ignore_status=404).indices.delete(
            index=f"{pipeline.unique}-reindex-*")
    assert_index_equals(pipeline_store, expected_index(STREAM))
