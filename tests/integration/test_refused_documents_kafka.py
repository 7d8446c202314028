"""A document refused for its content, on Kafka + Elasticsearch.

The embedded mode read its refusals from the local queue's dead-letter table; the
Kafka mode's ``status`` and standalone ``monitor`` did not read the dead-letter
topic, so a document whose front matter the chunker refuses showed
``missing_from_index`` with a lag that grew until someone edited it. Here a real
worker dead-letters three such documents onto the real dead-letter topic;
``status --json`` shows each ``refused`` with the dead letter's reason naming the
key, no lag and none behind, and ``monitor --once`` counts no lag for them.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from support.kafka_helpers import publish_events, wait_for_lag_zero
from support.waiting import wait_until
from support.workers import Pipeline

from events.model import Action, ChangeEvent
from sources.folder import MarkdownFolderSource

pytestmark = pytest.mark.services

GOOD = """---
title: Refund policy
version: 3
changed_at: 2026-01-15T10:00:00Z
access_labels: [public]
---
## Who can ask
Riders within 30 days.
"""
BAD = {  # document id: (front matter line, the key its reason names)
    "banana": ('valid_to: "banana"', "valid_to"),
    "null-label": ("access_labels: [null]", "access_labels"),
    "singular": ("access_label: [staff]", "access_label"),
}


def _file(line: str) -> str:
    return (f"---\ntitle: Lockers\nversion: 2\nchanged_at: 2026-01-15T10:00:00Z\n{line}\n---\n"
            "## Lockers\nThe word zebrafinch is only in refused documents.\n")


def _events(root: Path) -> list[ChangeEvent]:
    """What the folder's watcher would publish: each file at its front-matter version."""
    source = MarkdownFolderSource(root)
    events = []
    for entry in source.list_documents():
        document = source.get_document(entry.document_id)
        events.append(ChangeEvent(
            event_id=f"test-{uuid.uuid4().hex}", document_id=document.document_id,
            action=Action.UPSERT, version=document.version, changed_at=document.changed_at,
            content_type=document.content_type, content=document.content,
            metadata=document.metadata, source=source.name))
    return events


def test_a_refused_document_is_refused_in_status_and_not_lagging_on_kafka(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    root = tmp_path / "library"
    root.mkdir()
    (root / "refunds.md").write_text(GOOD)
    for document_id, (line, _key) in BAD.items():
        (root / f"{document_id}.md").write_text(_file(line))
    source = {"source_kind": "folder", "source_path": str(root)}
    worker = pipeline.start_worker(tmp_path / "logs")
    try:
        publish_events(pipeline.kafka, pipeline.topic, _events(root))
        wait_for_lag_zero(pipeline.kafka, pipeline.group, pipeline.topic, timeout_s=90)

        def status() -> dict[str, Any]:
            done = pipeline.cli("status", "--json", **source)
            assert done.stdout, done.stderr
            report: dict[str, Any] = json.loads(done.stdout)
            return report
        # The dead letters are written before the offsets are committed; the report is
        # asked again until every letter is read (a deadline, not a sleep).
        report = wait_until(
            status, 60, "every bad document refused in status", every_s=0.5,
            accept=lambda r: sorted(d["status"] for d in r["documents"])
            == ["current"] + ["refused"] * len(BAD))
    finally:
        assert worker.stop() == 0, worker.tail()
    docs = {d["document_id"]: d for d in report["documents"]}
    for document_id, (_line, key) in BAD.items():
        doc = docs[document_id]
        assert doc["lag_seconds"] is None and doc["indexed_version"] is None, doc
        assert doc["reason"].startswith("chunker:") and repr(key) in doc["reason"], doc
    assert docs["refunds"]["status"] == "current"
    assert report["behind"] == 0 and report["max_lag_seconds"] == 0, report

    once = pipeline.cli("monitor", "--once", **source)
    assert once.returncode == 0, once.stderr + once.stdout
    assert "source documents:  4" in once.stdout, once.stdout
    assert "behind:            0 " in once.stdout, once.stdout
    assert "max lag:           0 s" in once.stdout, once.stdout
