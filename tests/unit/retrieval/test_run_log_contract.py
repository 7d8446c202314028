"""One run-log contract, every implementation: memory, SQLite and Elasticsearch (``services``).

A run comes back as recorded, only to the key id that made it (another key's id reads
as no run at all), and retention drops runs by age and by count, newest kept.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import pytest
from elasticsearch import Elasticsearch

from retrieval.runs import (
    MemoryRunLog,
    RunLog,
    RunPassage,
    RunRetention,
    SearchRun,
    new_run_id,
    text_hash,
)
from retrieval.runs_es import ElasticsearchRunLog
from retrieval.runs_sqlite import SQLiteRunLog

NOW = datetime(2027, 5, 1, 12, 0, tzinfo=UTC)


@contextlib.contextmanager
def _memory(_request: pytest.FixtureRequest) -> Iterator[RunLog]:
    yield MemoryRunLog()


@contextlib.contextmanager
def _sqlite(request: pytest.FixtureRequest) -> Iterator[RunLog]:
    log = SQLiteRunLog(request.getfixturevalue("tmp_path") / "search_runs.sqlite3")
    try:
        yield log
    finally:
        log.close()


@contextlib.contextmanager
def _elasticsearch(request: pytest.FixtureRequest) -> Iterator[RunLog]:
    client = Elasticsearch(request.getfixturevalue("elasticsearch_url"))
    log = ElasticsearchRunLog(client, f"t{uuid.uuid4().hex[:12]}")
    try:
        yield log
    finally:
        client.indices.delete(index=log.index, ignore_unavailable=True)
        client.close()


LOGS = [
    pytest.param(_memory, id="memory"),
    pytest.param(_sqlite, id="sqlite"),
    pytest.param(_elasticsearch, id="elasticsearch", marks=pytest.mark.services),
]


@pytest.fixture(params=LOGS)
def run_log(request: pytest.FixtureRequest) -> Iterator[RunLog]:
    with request.param(request) as made:
        made.ensure_ready()
        made.ensure_ready()  # idempotent
        yield made


def run(key_id: str = "support-bot", at: datetime = NOW, **kw: object) -> SearchRun:
    passages = (
        RunPassage("refunds@v3#4-2", "refunds", "4.2", 3, "ranked", text_hash("14 days")),
        RunPassage("refunds@v3#4-3", "refunds", "4.3", 3, "neighbour_of", text_hash("x")),
    )
    fields: dict[str, object] = {
        "run_id": new_run_id(), "key_id": key_id, "at": at, "question": "refund? ü ✓",
        "scope": ("city:berlin",), "as_of": date(2027, 5, 1), "labels": ("agents", "public"),
        "status": "ok", "passages": passages, **kw}
    return SearchRun(**fields)  # type: ignore[arg-type]


def test_a_run_comes_back_as_recorded(run_log: RunLog) -> None:
    made = run()
    run_log.record(made)
    assert run_log.get(made.run_id, "support-bot") == made
    assert run_log.count() == 1


def test_a_run_without_passages(run_log: RunLog) -> None:
    made = run(status="no_document", passages=())
    run_log.record(made)
    assert run_log.get(made.run_id, "support-bot") == made


def test_runs_of_one_caller_are_never_readable_by_another(run_log: RunLog) -> None:
    mine, theirs = run("support-bot"), run("finance-desk")
    run_log.record(mine)
    run_log.record(theirs)
    assert run_log.get(mine.run_id, "finance-desk") is None
    assert run_log.get(theirs.run_id, "support-bot") is None
    assert run_log.get(theirs.run_id, "finance-desk") == theirs


def test_an_unknown_run_is_none(run_log: RunLog) -> None:
    assert run_log.get(new_run_id(), "support-bot") is None


def test_retention_removes_runs_older_than_its_days(run_log: RunLog) -> None:
    old, edge, new = (run(at=NOW - timedelta(days=31)), run(at=NOW - timedelta(days=29)),
                      run(at=NOW))
    for made in (old, edge, new):
        run_log.record(made)
    dropped = RunRetention(run_log, days=30, max_runs=100, clock=lambda: NOW).prune()
    assert dropped == 1
    assert run_log.get(old.run_id, "support-bot") is None
    assert run_log.get(edge.run_id, "support-bot") == edge
    assert run_log.get(new.run_id, "support-bot") == new


def test_retention_keeps_the_newest_runs_up_to_its_count(run_log: RunLog) -> None:
    made = [run(at=NOW - timedelta(minutes=n)) for n in range(5)]
    for each in made:
        run_log.record(each)
    assert RunRetention(run_log, days=30, max_runs=2, clock=lambda: NOW).prune() == 3
    assert run_log.count() == 2
    assert [run_log.get(r.run_id, "support-bot") is not None for r in made] == [
        True, True, False, False, False]


def test_retention_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="days=0"):
        RunRetention(MemoryRunLog(), days=0)
    with pytest.raises(ValueError, match="max_runs=0"):
        RunRetention(MemoryRunLog(), max_runs=0)
