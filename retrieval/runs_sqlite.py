"""The search run log of the embedded mode: one SQLite file beside the index.

A file of its own (``search_runs.sqlite3``), not a table of the index: a search
then never waits for a long chunk write to record its run, and the index can be
deleted and rebuilt without losing the runs replies were checked against. Opened
the one way (``sqlitedb.connect``); each write one ``BEGIN IMMEDIATE``.

A run is one row: its id, key id, time (ISO UTC, sortable) and the run as JSON.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import sqlitedb
from retrieval.runs import RunLogError, SearchRun

SCHEMA = """
CREATE TABLE IF NOT EXISTS search_runs (
    run_id TEXT PRIMARY KEY, key_id TEXT NOT NULL, at TEXT NOT NULL, body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS search_runs_at ON search_runs(at, run_id);
"""


def _at(moment: datetime) -> str:
    """A sortable UTC text: every row compares as its instant."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class SQLiteRunLog:
    """Implements ``retrieval.runs.RunLog`` in one SQLite file."""

    def __init__(self, path: str | Path, *,
                 busy_timeout_s: float = sqlitedb.BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._conn = sqlitedb.connect(self.path, busy_timeout_s=busy_timeout_s)
        except (OSError, sqlite3.Error) as exc:
            raise RunLogError(f"cannot open the search run log {str(self.path)!r}: {exc}") \
                from exc

    @contextmanager
    def _locked(self, what: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise RunLogError(f"search run log {str(self.path)!r}: {what}: {exc}") from exc

    def ensure_ready(self) -> None:
        with self._locked("create the table") as conn:
            conn.executescript(SCHEMA)

    def record(self, run: SearchRun) -> None:
        body = json.dumps(run.to_json(), ensure_ascii=False)
        with self._locked(f"record run {run.run_id!r}") as conn, sqlitedb.immediate(conn):
            conn.execute("INSERT INTO search_runs VALUES (?,?,?,?)",
                         (run.run_id, run.key_id, _at(run.at), body))

    def get(self, run_id: str, key_id: str) -> SearchRun | None:
        with self._locked(f"read run {run_id!r}") as conn:
            row = conn.execute("SELECT body FROM search_runs WHERE run_id = ? AND key_id = ?",
                               (run_id, key_id)).fetchone()
        return SearchRun.from_json(json.loads(row[0])) if row is not None else None

    def prune(self, *, before: datetime, keep: int) -> int:
        with self._locked("prune") as conn, sqlitedb.immediate(conn):
            old = conn.execute("DELETE FROM search_runs WHERE at < ?", (_at(before),)).rowcount
            over = conn.execute(
                "DELETE FROM search_runs WHERE run_id IN (SELECT run_id FROM search_runs "
                "ORDER BY at DESC, run_id DESC LIMIT -1 OFFSET ?)", (max(keep, 0),)).rowcount
        return int(old) + int(over)

    def count(self) -> int:
        with self._locked("count") as conn:
            (n,) = conn.execute("SELECT count(*) FROM search_runs").fetchone()
        return int(n)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
