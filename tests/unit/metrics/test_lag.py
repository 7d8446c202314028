"""The lag arithmetic on its own: one document, every case of the table in metrics.lag."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from metrics.freshness import LagMemory, measure
from metrics.lag import DocumentLag, LagStatus, document_lag
from sources.base import SourceEntry
from store.model import DocumentState

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def src(version: int, ago: timedelta, *, deleted: bool = False) -> SourceEntry:
    return SourceEntry("doc", version, NOW - ago, deleted)


def idx(version: int, *, deleted: bool = False) -> DocumentState:
    return DocumentState("doc", version, NOW - 10 * HOUR, NOW - 9 * HOUR, deleted=deleted)


def lag_of(source: SourceEntry | None, state: DocumentState | None, **kw: datetime) -> float:
    lag = document_lag("doc", source, state, **kw)
    assert lag is not None
    return lag.seconds(NOW)


def test_current_is_zero_however_old_the_document() -> None:
    lag = document_lag("doc", src(3, 700 * 24 * HOUR), idx(3))
    assert lag == DocumentLag("doc", LagStatus.CURRENT)
    assert lag.seconds(NOW) == 0.0


def test_index_ahead_of_the_source_is_not_behind() -> None:
    assert lag_of(src(3, HOUR), idx(4)) == 0.0


def test_behind_counts_from_the_change_the_index_lacks() -> None:
    lag = document_lag("doc", src(4, 2 * HOUR), idx(3))
    assert lag is not None and lag.status is LagStatus.BEHIND
    assert lag.seconds(NOW) == 7200.0


def test_missing_from_index() -> None:
    lag = document_lag("doc", src(1, 30 * timedelta(seconds=1)), None)
    assert lag is not None and lag.status is LagStatus.MISSING_FROM_INDEX
    assert lag.seconds(NOW) == 30.0
    # a tombstone older than the source's live version: the document came back
    back = document_lag("doc", src(5, HOUR), idx(4, deleted=True))
    assert back is not None and back.status is LagStatus.MISSING_FROM_INDEX


def test_deleted_at_source_with_a_known_time() -> None:
    lag = document_lag("doc", src(5, 3 * HOUR, deleted=True), idx(4))
    assert lag is not None and lag.status is LagStatus.DELETED_AT_SOURCE
    assert lag.seconds(NOW) == 3 * 3600.0


def test_deleted_at_source_and_in_the_index_is_current() -> None:
    assert lag_of(src(5, HOUR, deleted=True), idx(5, deleted=True)) == 0.0
    assert lag_of(src(7, HOUR, deleted=True), idx(5, deleted=True)) == 0.0
    assert document_lag("doc", src(5, HOUR, deleted=True), None) == DocumentLag(
        "doc", LagStatus.CURRENT
    )


def test_absent_from_a_source_without_tombstones_counts_from_first_seen_absent() -> None:
    lag = document_lag("doc", None, idx(2), absent_since=NOW - 90 * timedelta(seconds=1))
    assert lag is not None and lag.status is LagStatus.DELETED_AT_SOURCE
    assert lag.seconds(NOW) == 90.0
    assert document_lag("doc", None, None) is None
    assert lag_of(None, idx(2, deleted=True)) == 0.0


def test_a_source_clock_in_the_future_reads_zero_but_still_behind() -> None:
    lag = document_lag("doc", src(4, -HOUR), idx(3))
    assert lag is not None and lag.status is LagStatus.BEHIND
    assert lag.seconds(NOW) == 0.0


def test_a_document_that_keeps_changing_lags_from_its_first_unindexed_change() -> None:
    memory = LagMemory()
    state = idx(1)

    def cycle(version: int, changed: timedelta, at: datetime) -> float:
        snap = measure([SourceEntry("doc", version, NOW - changed)], [state], [], now=at,
                       memory=memory, max_series=10, grace=timedelta(0))
        return snap.max_lag_seconds(at)

    # v2 made 50 min ago; then v3 10 min ago, v4 1 min ago: the index still lacks v2.
    assert cycle(2, 50 * timedelta(minutes=1), NOW) == 3000.0
    assert cycle(3, 10 * timedelta(minutes=1), NOW) == 3000.0
    assert cycle(4, timedelta(minutes=1), NOW + HOUR) == 3000.0 + 3600.0
    # the index catches up to v4, the source moves to v5: lag restarts from v5's change
    state = idx(4)
    assert cycle(5, timedelta(minutes=1), NOW) == 60.0
