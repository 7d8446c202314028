"""The lag arithmetic on a real change history: the index frozen mid-history while the
monitor watches the rest of the basecamp log arrive, one change at a time."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from metrics.monitor import FreshnessMonitor
from sources.changelog import ChangeLogSource
from store.memory import InMemoryStore
from store.model import DocumentState

pytestmark = pytest.mark.corpus
FROZEN_AT = 250  # the index holds the library as it stood after this change


def test_each_document_lags_from_its_first_change_after_the_index_stopped(
    corpora_dir: Path,
) -> None:
    path = corpora_dir / "basecamp-policies.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    store = InMemoryStore()
    for entry in ChangeLogSource(path, until_seq=FROZEN_AT).list_documents():
        store.put_state(DocumentState(entry.document_id, entry.version, entry.changed_at,
                                      entry.changed_at, deleted=entry.deleted))
    # expected, straight from the raw log: the first change after FROZEN_AT per document,
    # unless the document ends where the index is (a delete of a document never indexed)
    frozen = {r["document_id"]: r for r in records if r["seq"] <= FROZEN_AT}
    last = {r["document_id"]: r for r in records}
    first_after: dict[str, datetime] = {}
    for r in records:
        if r["seq"] > FROZEN_AT and r["document_id"] not in first_after:
            first_after[r["document_id"]] = datetime.fromisoformat(
                r["changed_at"].replace("Z", "+00:00"))
    expected = {
        doc: since for doc, since in first_after.items()
        if not (last[doc]["action"] == "delete"
                and (doc not in frozen or frozen[doc]["action"] == "delete"))
    }
    assert len(expected) > 5  # the test means something only if many documents move

    now = datetime(2024, 6, 1, tzinfo=UTC)
    source = ChangeLogSource(path, until_seq=FROZEN_AT)
    monitor = FreshnessMonitor(source, store, max_series=None, clock=lambda: now)
    for seq in range(FROZEN_AT + 1, records[-1]["seq"] + 1):  # the rest arrives, one by one
        source.until_seq = seq
        source.close()  # forget the fold: re-read up to the new position
        assert monitor.run_cycle() is not None
    snapshot = monitor.snapshot
    assert snapshot is not None
    lags = {lag.document_id: lag for lag in snapshot.most_lagging}
    assert set(lags) == set(expected)
    for doc, since in expected.items():
        assert lags[doc].seconds(now) == (now - since) / timedelta(seconds=1), doc
    assert snapshot.max_lag_seconds(now) == max((now - s).total_seconds()
                                                for s in expected.values())
