"""A store that cannot write for now is waited for, never dead-lettered.

A full disk ("database or disk is full", SQLITE_FULL) used to be tried 3 times and
dead-lettered as ``unexpected``: the error surfaced as a plain ``StoreError``, and
mid-statement it was even hidden behind "cannot rollback - no transaction is active"
(SQLite had rolled back by itself). Here the SQLite index is real and made full with
``PRAGMA max_page_count`` (SQLite's own SQLITE_FULL, no root needed; the integration
test ``tests/integration/test_store_full_embedded.py`` fills a real filesystem).
"""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from support.chunks import fake_chunker
from support.waiting import wait_until

import sqlitedb
from consumers.commit_policy import CommitPolicy
from consumers.local_dead_letters import LocalDeadLetterSink
from consumers.retry import HealthState, RetryPolicy
from consumers.worker import Worker
from events.model import Action, ChangeEvent
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from policy_indexer.runtime.http import worker_health
from store.errors import StoreError, StoreUnavailableError
from store.sqlite import SQLiteStore, translate
from transport.local_clients import LocalQueueConsumer, LocalQueuePublisher
from transport.local_queue import LocalQueue

TOPIC = "changes"


def upsert(doc: str, version: int) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc, action=Action.UPSERT, version=version,
        changed_at=datetime(2024, 1, 1, tzinfo=UTC), content_type="text/markdown",
        content=f"# {doc}\n\n" + f"alpha {doc} v{version} " * 400,
    )


def fill(store: SQLiteStore) -> None:
    """The index file may not grow by a page: every write that needs one is SQLITE_FULL."""
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count={pages}")


def free(store: SQLiteStore) -> None:
    store._conn.execute("PRAGMA max_page_count=1073741823")


def test_a_full_index_says_so_and_keeps_nothing_of_the_failed_write(
    sqlite_store: SQLiteStore,
) -> None:
    chunks = fake_chunker("refunds", 1, "# refunds\n\n" + "alpha " * 20_000)
    fill(sqlite_store)
    with pytest.raises(StoreUnavailableError, match="database or disk is full"):
        sqlite_store.write_chunks(chunks)  # SQLite rolled back mid-statement: not a ROLLBACK error
    assert sqlite_store.count_chunks() == {}
    free(sqlite_store)
    assert sqlite_store.write_chunks(chunks) == len(chunks)


@pytest.mark.parametrize("message", [
    "database or disk is full", "disk I/O error", "database is locked",
    "unable to open database file", "database table is locked",
])
def test_sqlite_errors_of_a_store_away_are_unavailable(message: str) -> None:
    assert isinstance(translate("write chunks", sqlite3.OperationalError(message)),
                      StoreUnavailableError)


def test_other_sqlite_errors_stay_plain_store_errors() -> None:
    for exc in (sqlite3.OperationalError("no such table: chunks"),
                sqlite3.IntegrityError("UNIQUE constraint failed")):
        error = translate("write chunks", exc)
        assert type(error) is StoreError, error


def test_a_commit_that_fails_leaves_no_transaction_open(tmp_path: Path) -> None:
    conn = sqlitedb.connect(tmp_path / "x.sqlite3")
    conn.execute("CREATE TABLE t(x)")
    conn.execute("PRAGMA max_page_count=" + str(conn.execute("PRAGMA page_count").fetchone()[0]))
    with pytest.raises(sqlite3.OperationalError, match="full"), sqlitedb.immediate(conn):
        conn.executemany("INSERT INTO t VALUES (?)", [(b"x" * 4000,)] * 50)
    assert not conn.in_transaction
    conn.execute("PRAGMA max_page_count=1073741823")
    with sqlitedb.immediate(conn):  # the next transaction starts
        conn.execute("INSERT INTO t VALUES (1)")
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (1,)
    conn.close()


def test_the_worker_waits_for_a_full_index_and_indexes_everything_once_space_is_freed(
    queue: LocalQueue, sqlite_store: SQLiteStore,
) -> None:
    events = [upsert(f"doc-{i:02d}", v) for i in range(26) for v in (1, 2)]
    fill(sqlite_store)
    LocalQueuePublisher(queue, TOPIC).publish_many(events)
    health = HealthState()
    worker = Worker(
        LocalQueueConsumer(queue, TOPIC), Indexer(sqlite_store, chunk=fake_chunker),
        LocalDeadLetterSink(queue, TOPIC),
        metrics=WorkerMetrics.create(CollectorRegistry()), health=health,
        retry=RetryPolicy(initial_s=0.01, max_s=0.05, jitter_s=0.0),
        commit=CommitPolicy(max_records=10, max_interval_s=0.1), poll_timeout_s=0.05,
        max_records=10, unexpected_attempts=3,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    report = worker_health(health)
    try:
        wait_until(lambda: health.attempts, 10, "more tries than unexpected_attempts",
                   every_s=0.01, accept=lambda n: n >= 6)
        body = report()
        assert body["status"] == "retrying" and body["waiting_for"] == "store", body
        assert "StoreUnavailableError" in body["last_error"], body
        assert "database or disk is full" in body["last_error"], body
        assert queue.dead_letters(TOPIC) == []
        assert queue.pending(TOPIC) == len(events)  # nothing committed, nothing taken further
        free(sqlite_store)
        wait_until(lambda: queue.pending(TOPIC), 20, "the worker to index what it held",
                   every_s=0.02, accept=lambda n: n == 0)
    finally:
        worker.request_stop()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert queue.dead_letters(TOPIC) == []
    states = {s.document_id: s.version for s in sqlite_store.iter_states()}
    assert states == {f"doc-{i:02d}": 2 for i in range(26)}
    assert report()["status"] == "stopping"
    assert "waiting_for" not in report()
