"""`policy-indexer sweep` on real Elasticsearch: removes planted leftovers, leaves a clean index."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from support.chunks import make_chunk
from support.index_equality import assert_index_equals, expected_index
from support.workers import Pipeline

from consumers.processor import EventProcessor
from events.model import Action, ChangeEvent
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


def test_sweep_removes_planted_leftovers_and_then_has_nothing_to_do(
    pipeline: Pipeline, pipeline_store: ElasticsearchStore
) -> None:
    store = pipeline_store
    store.ensure_ready()
    stream = [
        event("refund", 1, "# Refund\n\nThirty days.\n"),
        event("refund", 2, "# Refund\n\nSixty days.\n\n## Exceptions\n\nNone.\n"),
        event("terms", 1, "# Terms\n\nBe nice.\n"),
        event("old-name", 1, "# Old\n\nRenamed soon.\n"),
        event("old-name", 2, None),
    ]
    processor = EventProcessor(store)
    for e in stream:
        processor.handle(e)
    expected = expected_index(stream)
    long_ago, now = "2020-01-01T00:00:00+00:00", datetime.now(UTC).isoformat()
    planted = {
        plant(store, "refund", 1, long_ago): "older",
        plant(store, "old-name", 1, long_ago): "deleted-document",
        plant(store, "terms", 5, long_ago): "above-current",
        plant(store, "never-seen", 3, long_ago): "unknown-document",
    }
    young = plant(store, "terms", 6, now)  # a worker may be writing it right now

    out = pipeline.cli("sweep", "--grace-seconds", "600")
    assert out.returncode == 0, out.stderr
    for reason in set(planted.values()):
        assert f"  {reason}: 1" in out.stdout
    assert "deleted 4 chunks" in out.stdout
    assert "kept 1 chunks younger than the grace period" in out.stdout
    store.delete_chunks([young])
    assert_index_equals(store, expected)

    again = pipeline.cli("sweep", "--grace-seconds", "600")
    assert again.returncode == 0, again.stderr
    assert "no leftovers: nothing to do" in again.stdout
    assert "deleted 0 chunks" in again.stdout
    assert_index_equals(store, expected)
