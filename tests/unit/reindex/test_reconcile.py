from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.index_equality import assert_index_equals, expected_index
from support.reindex_library import Library
from support.source_fakes import ListSource

from indexing.core import Indexer
from reindex.model import Outcome
from reindex.reconcile import ReconcileOptions, Reconciler
from sources.base import SourceDocument, SourceEntry
from sources.changelog import ChangeLogSource
from sources.errors import SourceUnavailableError
from store.memory import InMemoryStore

T = datetime(2026, 1, 1, tzinfo=UTC)


def indexed_library(tmp_path: Path, documents: int = 20) -> tuple[Library, InMemoryStore]:
    """A library of ``documents`` at v1, all indexed through the worker's processor."""
    library = Library(tmp_path / "changes.jsonl")
    for n in range(documents):
        library.upsert(f"doc-{n:02d}", 1)
    library.write()
    store = InMemoryStore()
    processor = Indexer(store)
    for event in library.events:
        processor.apply_one(event)
    return library, store


def snapshot(store: InMemoryStore) -> tuple[dict[str, object], dict[str, object]]:
    return dict(store.chunks), dict(store.states)


def test_drift_is_repaired_to_exactly_the_source_state(tmp_path: Path) -> None:
    library, store = indexed_library(tmp_path)
    library.upsert("doc-00", 2)            # behind
    library.upsert("doc-01", 2)
    library.upsert("new-1", 1)             # missing
    library.delete("doc-02", 2)            # tombstoned at the source
    library.upsert("brief", 1)
    library.delete("brief", 2)             # never indexed, tombstone
    library.write()
    store.delete_chunks([c for c in store.chunks if c.startswith("doc-03@")])  # repair

    report = Reconciler(ChangeLogSource(library.path), store).run()

    assert report.outcome is Outcome.SUCCESS, report
    assert report.decided == {"up_to_date": 16, "reindex": 3, "delete": 1, "repair": 1,
                              "tombstone": 1}
    assert_index_equals(store, expected_index(library.events))


def test_an_up_to_date_index_is_left_untouched(tmp_path: Path) -> None:
    library, store = indexed_library(tmp_path)
    before = snapshot(store)
    report = Reconciler(ChangeLogSource(library.path), store).run()
    assert report.outcome is Outcome.SUCCESS
    assert report.decided == {"up_to_date": 20} and not report.applied
    assert snapshot(store) == before


def test_a_listing_that_fails_halfway_deletes_nothing_and_fails(tmp_path: Path) -> None:
    _, store = indexed_library(tmp_path)
    source = ListSource(fail_with=SourceUnavailableError("503 from the CMS"))
    for n in range(20):
        source.put(SourceEntry(f"doc-{n:02d}", 1, T))
    before = snapshot(store)
    report = Reconciler(source, store).run()
    assert report.outcome is Outcome.FAILED
    assert report.error is not None and "after 10 entries" in report.error
    assert "503 from the CMS" in report.error
    assert snapshot(store) == before


def test_an_empty_listing_is_an_outage_not_an_empty_library(tmp_path: Path) -> None:
    _, store = indexed_library(tmp_path)
    before = snapshot(store)
    report = Reconciler(ListSource(), store, options=ReconcileOptions(allow_mass_delete=True)).run()
    assert report.outcome is Outcome.FAILED
    assert report.error is not None and "listed no documents" in report.error
    assert snapshot(store) == before


class DuplicatingSource(ListSource):
    def list_documents(self) -> Iterator[SourceEntry]:
        entries = list(self.entries.values())
        yield from entries
        yield entries[0]  # a page served twice


def test_a_listing_with_a_duplicate_is_not_trusted(tmp_path: Path) -> None:
    _, store = indexed_library(tmp_path)
    source = DuplicatingSource()
    for n in range(15):
        source.put(SourceEntry(f"doc-{n:02d}", 1, T))
    report = Reconciler(source, store).run()
    assert report.outcome is Outcome.FAILED
    assert report.error is not None and "twice" in report.error
    assert len(store.states) == 20


def test_mass_deletion_is_refused_then_done_with_the_flag(tmp_path: Path) -> None:
    _, store = indexed_library(tmp_path)
    source = ListSource()
    for n in range(17):  # 3 of 20 gone: 15% > 10%
        source.put(SourceEntry(f"doc-{n:02d}", 1, T))
    report = Reconciler(source, store).run()
    assert report.outcome is Outcome.REFUSED
    assert (report.decided["delete"], report.deletions_allowed) == (3, 2)
    assert not any(s.deleted for s in store.states.values())

    report = Reconciler(source, store, options=ReconcileOptions(allow_mass_delete=True)).run()
    assert report.outcome is Outcome.SUCCESS
    assert sorted(d for d, s in store.states.items() if s.deleted) == [
        "doc-17", "doc-18", "doc-19"]
    assert not [c for c in store.chunks if c.startswith(("doc-17", "doc-18", "doc-19"))]


class ForgetfulSource(ListSource):
    """Lists one document less than it holds (a pagination bug)."""

    def list_documents(self) -> Iterator[SourceEntry]:
        return iter(list(self.entries.values())[:-1])


def test_a_document_the_listing_left_out_but_the_source_has_is_not_deleted(
    tmp_path: Path,
) -> None:
    _, store = indexed_library(tmp_path)
    source = ForgetfulSource()
    for n in range(20):
        source.put(SourceEntry(f"doc-{n:02d}", 1, T))
    report = Reconciler(source, store).run()
    assert report.outcome is Outcome.FAILED
    assert "listing is incomplete" in report.failures[0]
    assert not store.states["doc-19"].deleted


def test_dry_run_decides_and_changes_nothing(tmp_path: Path) -> None:
    library, store = indexed_library(tmp_path)
    library.upsert("doc-00", 2)
    library.write()
    before = snapshot(store)
    report = Reconciler(ChangeLogSource(library.path), store,
                        options=ReconcileOptions(dry_run=True)).run()
    assert report.decided["reindex"] == 1 and not report.applied
    assert snapshot(store) == before


def test_an_interrupted_run_fails_and_the_next_one_finishes(tmp_path: Path) -> None:
    library, store = indexed_library(tmp_path)
    for n in range(10):
        library.upsert(f"doc-{n:02d}", 2)
    library.write()
    calls = iter(range(100))
    report = Reconciler(ChangeLogSource(library.path), store,
                        should_stop=lambda: next(calls) >= 4).run()
    assert report.outcome is Outcome.FAILED
    assert report.error is not None and "RunInterrupted" in report.error
    assert sum(report.applied.values()) == 4

    report = Reconciler(ChangeLogSource(library.path), store).run()
    assert report.outcome is Outcome.SUCCESS and report.decided["reindex"] == 6
    assert_index_equals(store, expected_index(library.events))


def test_the_index_is_never_taken_back_in_time(tmp_path: Path) -> None:
    library, store = indexed_library(tmp_path)
    source = ListSource()
    for n in range(20):
        source.put(SourceEntry(f"doc-{n:02d}", 1, T))
    Indexer(store).apply_one(library.upsert("doc-05", 3))
    report = Reconciler(source, store).run()
    assert report.decided["ahead"] == 1
    assert store.states["doc-05"].version == 3


@pytest.mark.parametrize("fraction", [0.0, 0.5])
def test_the_cap_is_a_fraction_of_the_indexed_documents(tmp_path: Path, fraction: float) -> None:
    _, store = indexed_library(tmp_path)
    source = ListSource()
    for n in range(19):
        source.put(SourceEntry(f"doc-{n:02d}", 1, T))
    report = Reconciler(source, store,
                        options=ReconcileOptions(max_delete_fraction=fraction)).run()
    assert report.refused is (fraction == 0.0)


class RacingSource(ChangeLogSource):
    """A worker indexes a newer version of ``doc`` just while the reconcile fetches it."""

    def __init__(self, path: Path, store: InMemoryStore, library: Library, doc: str) -> None:
        super().__init__(path)
        self.processor, self.library, self.doc = Indexer(store), library, doc

    def get_document(self, document_id: str) -> SourceDocument:
        document = super().get_document(document_id)
        if document_id == self.doc:
            self.processor.apply_one(self.library.upsert(self.doc, document.version + 1))
        return document


def test_a_worker_racing_the_reconcile_keeps_the_newer_version(tmp_path: Path) -> None:
    library, store = indexed_library(tmp_path)
    library.upsert("doc-00", 2)
    library.write()
    report = Reconciler(RacingSource(library.path, store, library, "doc-00"), store).run()
    assert report.outcome is Outcome.SUCCESS
    assert report.applied == {"skipped_stale": 1}  # the guard, not the reconcile, decided
    assert store.states["doc-00"].version == 3
    assert sorted(c for c in store.chunks if c.startswith("doc-00@")) == [
        c for c in sorted(store.chunks) if c.startswith("doc-00@v3")]


def test_a_document_recreated_by_a_worker_during_the_run_is_not_deleted(tmp_path: Path) -> None:
    _, store = indexed_library(tmp_path)
    source = ListSource()
    for n in range(19):
        source.put(SourceEntry(f"doc-{n:02d}", 1, T))

    class Racing(ListSource):
        def list_documents(self) -> Iterator[SourceEntry]:
            yield from source.list_documents()
            # The worker indexes doc-19 v2 after the listing, before the delete.
            Indexer(store).apply_one(Library(tmp_path / "x.jsonl").upsert("doc-19", 2))

    report = Reconciler(Racing(), store).run()
    assert report.decided["delete"] == 1 and report.applied == {"changed_meanwhile": 1}
    assert not store.states["doc-19"].deleted and store.states["doc-19"].version == 2
