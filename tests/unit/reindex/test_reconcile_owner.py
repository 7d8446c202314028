"""The reconcile compares each document only with its own source.

Documents another source owns are neither deleted as "gone from the source" nor
counted in the deletion cap, so the folder's night of repairs is not blocked by
documents that came through the webhook; the source's own and unowned ones are.
"""

from __future__ import annotations

from datetime import UTC, datetime

from support.chunks import fake_chunker
from support.source_fakes import ListSource

from events.model import Action, ChangeEvent
from indexing.core import Indexer
from reindex.model import Outcome
from reindex.reconcile import ReconcileOptions, Reconciler
from sources.base import SourceEntry
from store.memory import InMemoryStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def index(indexer: Indexer, doc: str, version: int, source: str | None) -> None:
    indexer.apply_one(ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc, action=Action.UPSERT, version=version,
        changed_at=T0, content_type="text/markdown", content=f"alpha {doc}", source=source))


def test_a_webhook_only_document_is_not_planned_for_deletion() -> None:
    store = InMemoryStore()
    indexer = Indexer(store, chunk=fake_chunker)
    source = ListSource()  # named "memory"
    for n in range(3):
        source.put(SourceEntry(f"own-{n}", 1, T0), "alpha own")
        index(indexer, f"own-{n}", 1, "memory")
    for n in range(6):  # far above the 10% cap, were they counted as gone from the source
        index(indexer, f"cms-{n}", 2, "cms")
    index(indexer, "legacy", 1, None)  # unowned, gone from the source: deleted

    dry = Reconciler(source, store, indexer=indexer,
                     options=ReconcileOptions(dry_run=True, max_delete_fraction=0.5)).run()
    assert dry.reasons["other_owner"] == 6
    assert dry.decided["delete"] == 1 and dry.indexed_documents == 4
    assert not dry.refused

    report = Reconciler(source, store, indexer=indexer,
                        options=ReconcileOptions(max_delete_fraction=0.5)).run()
    assert report.outcome is Outcome.SUCCESS, report.failures
    live = {s.document_id: s.owner for s in store.iter_states() if not s.deleted}
    assert live == {**{f"own-{n}": "memory" for n in range(3)},
                    **{f"cms-{n}": "cms" for n in range(6)}}


def test_a_listed_document_another_source_owns_is_left_alone() -> None:
    store = InMemoryStore()
    indexer = Indexer(store, chunk=fake_chunker)
    index(indexer, "clash", 4, "cms")
    index(indexer, "adopt", 1, None)
    source = ListSource()
    source.put(SourceEntry("clash", 9, T0), "alpha from the folder")
    source.put(SourceEntry("adopt", 2, T0), "alpha adopted")
    report = Reconciler(source, store, indexer=indexer).run()
    assert report.outcome is Outcome.SUCCESS, report.failures
    assert report.reasons["other_owner"] == 1 and report.reasons["behind"] == 1
    clash, adopt = store.get_state("clash"), store.get_state("adopt")
    assert clash is not None and (clash.version, clash.owner) == (4, "cms")
    assert adopt is not None and (adopt.version, adopt.owner) == (2, "memory")
