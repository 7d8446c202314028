"""The real basecamp policy history: an index left at mid-history is brought to the end."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.index_equality import assert_index_equals, expected_index

from events.changelog import read_changelog
from indexing.core import Indexer
from reindex.model import Outcome
from reindex.reconcile import ReconcileOptions, Reconciler
from sources.changelog import ChangeLogSource
from store.memory import InMemoryStore

pytestmark = pytest.mark.corpus


def test_reconcile_brings_a_mid_history_index_to_the_end_of_the_log(corpora_dir: Path) -> None:
    log = corpora_dir / "basecamp-policies.jsonl"
    events = list(read_changelog(log))
    half = len(events) // 2
    store = InMemoryStore()
    processor = Indexer(store)
    for event in events[:half]:  # the worker ran until mid-history, then stopped
        processor.apply_one(event)

    dry = Reconciler(ChangeLogSource(log), store, options=ReconcileOptions(dry_run=True)).run()
    assert dry.decided["reindex"] > 0
    assert dry.decided["delete"] == 1  # under the cap: 10% of the 22 documents indexed then
    report = Reconciler(ChangeLogSource(log), store).run()
    assert report.outcome is Outcome.SUCCESS, report.failures or report.error
    assert_index_equals(store, expected_index(events))

    again = Reconciler(ChangeLogSource(log), store).run()
    assert set(again.decided) == {"up_to_date"} and not again.applied
