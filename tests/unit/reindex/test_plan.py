from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reindex.model import Decision, IndexedDocument
from reindex.plan import decide, plan
from sources.base import SourceEntry

T = datetime(2026, 1, 1, tzinfo=UTC)


def live(version: int) -> SourceEntry:
    return SourceEntry("d", version, T)


def gone(version: int) -> SourceEntry:
    return SourceEntry("d", version, T, deleted=True)


def held(version: int, chunks: int = 3, *, present: int | None = None, older: int = 0,
         deleted: bool = False) -> IndexedDocument:
    if deleted:
        return IndexedDocument(version, True, 0, 0, older)
    return IndexedDocument(version, False, chunks, chunks if present is None else present, older)


@pytest.mark.parametrize(
    ("entry", "indexed", "decision", "reason"),
    [
        (live(2), None, Decision.REINDEX, "missing"),
        (live(2), held(1), Decision.REINDEX, "behind"),
        (live(3), held(2, deleted=True), Decision.REINDEX, "recreated"),
        (live(2), held(2), Decision.UP_TO_DATE, "current"),
        (live(2), held(2, present=1), Decision.REPAIR, "chunk_count"),
        (live(2), held(2, present=4), Decision.REPAIR, "chunk_count"),
        (live(2), held(2, older=2), Decision.REPAIR, "chunk_count"),
        (live(2), held(5), Decision.AHEAD, "index_newer"),
        (gone(4), None, Decision.TOMBSTONE, "never_indexed"),
        (gone(4), held(3), Decision.DELETE, "tombstoned_at_source"),
        (gone(4), held(4), Decision.AHEAD, "live_at_tombstone_version"),
        (gone(4), held(4, deleted=True), Decision.UP_TO_DATE, "deleted"),
        (gone(4), held(4, deleted=True, older=1), Decision.REPAIR, "chunks_of_deleted"),
        (None, held(3), Decision.DELETE, "gone_from_source"),
        (None, held(3, deleted=True), Decision.UP_TO_DATE, "deleted"),
        (live(2), held(2, deleted=True), Decision.AHEAD, "tombstone_at_live_version"),
    ],
)
def test_each_case_gets_its_decision(
    entry: SourceEntry | None, indexed: IndexedDocument | None, decision: Decision, reason: str
) -> None:
    action = decide("d", entry, indexed)
    assert (action.decision, action.reason) == (decision, reason)


def test_plan_covers_documents_of_both_sides_once() -> None:
    listing = {"a": SourceEntry("a", 1, T), "b": SourceEntry("b", 1, T)}
    index = {"b": held(1), "c": held(1)}
    actions = list(plan(listing, index))
    assert [(a.document_id, a.decision) for a in actions] == [
        ("a", Decision.REINDEX), ("b", Decision.UP_TO_DATE), ("c", Decision.DELETE),
    ]
