"""What a listing with an unlistable folder means to its consumers.

The folder source lists a sub-folder it cannot list as one ``unlistable`` entry
(``private/``). ``with_unlisted`` turns every indexed document under it into an
unreadable entry, so ``status`` and the monitor show them ``unreadable`` (kept,
no lag) and never ``deleted_at_source``; a document beside the folder with the
same stem (``private.md`` listed) keeps its own entry.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from metrics.freshness import LagMemory, measure
from policy_indexer.status_report import document_statuses
from sources.base import SourceEntry, Unreadable, UnreadableKind
from sources.unlisted import covering, with_unlisted
from store.model import DocumentState

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
FOLDER = SourceEntry("private/", 0, NOW, unreadable=Unreadable(
    UnreadableKind.UNLISTABLE, "/lib/private: cannot list the folder: Permission denied"))


def state(document_id: str, version: int = 5) -> DocumentState:
    return DocumentState(document_id, version, NOW, NOW, (f"{document_id}@v{version}#a",))


LISTING = [SourceEntry("refunds", 5, NOW), FOLDER]
INDEXED = [state("refunds"), state("private/salaries"), state("private/deep/bonus"),
           state("private"), state("gone")]


def test_with_unlisted_lists_the_indexed_documents_under_the_folder_as_unreadable() -> None:
    entries = {e.document_id: e for e in with_unlisted(LISTING, [s.document_id for s in INDEXED])}
    assert set(entries) == {"refunds", "private/", "private/salaries", "private/deep/bonus",
                            "private"}  # "gone" is not under it: absent, as before
    reason = entries["private/salaries"].unreadable
    assert reason is not None and reason.kind is UnreadableKind.UNLISTABLE
    assert "under 'private/', which cannot be listed" in reason.detail
    assert "Permission denied" in reason.detail
    assert covering("privately", ["private/"]) is None
    assert with_unlisted([SourceEntry("a", 1, NOW)], ["b"]) == [SourceEntry("a", 1, NOW)]


def test_a_listed_document_keeps_its_own_entry() -> None:
    listing = [*LISTING, SourceEntry("private", 7, NOW)]  # private.md beside the folder
    entries = {e.document_id: e for e in with_unlisted(listing, ["private", "private/x"])}
    assert entries["private"] == SourceEntry("private", 7, NOW)
    assert entries["private/x"].unreadable is not None


def test_status_shows_them_unreadable_and_kept_never_deleted_at_source() -> None:
    docs, _ = document_statuses(LISTING, INDEXED, [], now=NOW, grace=timedelta(minutes=5))
    by_id = {d.document_id: d for d in docs}
    for document_id in ("private/salaries", "private/deep/bonus", "private"):
        doc = by_id[document_id]
        assert (doc.status, doc.lag_seconds, doc.indexed_version) == ("unreadable", None, 5)
        assert doc.reason is not None and doc.reason.startswith("unlistable: under 'private/'")
    assert by_id["refunds"].status == "current"
    assert by_id["gone"].status == "deleted_at_source"  # elsewhere, a deletion is still one


def test_the_monitor_counts_them_unreadable_with_no_lag() -> None:
    snapshot = measure(LISTING, INDEXED, [], now=NOW, memory=LagMemory(), max_series=100,
                       grace=timedelta(minutes=5))
    assert snapshot.unreadable_by_reason() == {"unlistable": 4}  # the folder and its 3
    assert snapshot.behind_by_status == {"behind": 0, "missing_from_index": 0,
                                         "deleted_at_source": 1}  # "gone" only
    assert [lag.document_id for lag in snapshot.most_lagging] == ["gone"]
