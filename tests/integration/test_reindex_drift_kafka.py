"""The whole story: the Kafka worker indexes, stops, changes are lost, the reindex repairs."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.index_equality import assert_index_equals, expected_index
from support.kafka_helpers import publish_events, wait_for_lag_zero
from support.reindex_library import Library
from support.workers import Pipeline

from store.elasticsearch import ElasticsearchStore

pytestmark = pytest.mark.services


def test_changes_missed_by_a_stopped_worker_are_repaired_by_one_reconcile(
    pipeline: Pipeline, pipeline_store: ElasticsearchStore, tmp_path: Path
) -> None:
    library = Library(tmp_path / "changes.jsonl")
    for n in range(30):
        library.upsert(f"doc-{n:02d}", 1)
    library.upsert("doc-05", 2)
    library.write()
    publish_events(pipeline.kafka, pipeline.topic, library.events)
    worker = pipeline.start_worker(tmp_path / "logs")
    try:
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic, timeout_s=90)
    finally:
        assert worker.stop() == 0, worker.tail()

    # The worker is stopped; the library changes and no event reaches Kafka.
    for n in range(10, 14):
        library.upsert(f"doc-{n:02d}", 2)
    library.upsert("doc-05", 3)
    library.upsert("added", 1)
    library.delete("doc-20", 2)
    library.delete("doc-21", 2)
    library.write()

    env = {"source_kind": "changelog", "source_path": str(library.path)}
    result = pipeline.cli("reindex", **env)
    try:
        assert result.returncode == 0, result.stderr + result.stdout
        assert "  reindex: 6" in result.stdout and "  delete: 2" in result.stdout
        assert_index_equals(pipeline_store, expected_index(library.events))
    finally:
        pipeline_store.client.options(ignore_status=404).indices.delete(
            index=f"{pipeline.unique}-reindex-*")
