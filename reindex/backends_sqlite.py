"""The run log and the lease in one SQLite file (the embedded mode's scheduler).

Several processes on one machine may open the file; ``BEGIN IMMEDIATE`` makes
each lease read-and-write one step (the row's ``seq`` is the compare-and-set).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlitedb
from reindex.errors import LeaseError
from reindex.lease import LeaseRecord
from reindex.runs import RunRecord

SCHEMA = """
CREATE TABLE IF NOT EXISTS reindex_runs (
    run_id TEXT PRIMARY KEY, job TEXT NOT NULL, trigger TEXT NOT NULL, holder TEXT NOT NULL,
    started_at TEXT NOT NULL, ended_at TEXT, outcome TEXT NOT NULL, counts TEXT NOT NULL,
    error TEXT, dry_run INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS reindex_runs_job ON reindex_runs(job, started_at);
CREATE TABLE IF NOT EXISTS reindex_lease (
    job TEXT PRIMARY KEY, holder TEXT NOT NULL, token TEXT NOT NULL, expires_at TEXT NOT NULL,
    scheduled_started_at TEXT NOT NULL, seq INTEGER NOT NULL
);
"""


class SchedulerDatabase:
    """One connection to the scheduler's file, shared by the run log and the lease."""

    def __init__(self, path: str | Path, *,
                 busy_timeout_s: float = sqlitedb.BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn = sqlitedb.connect(self.path, busy_timeout_s=busy_timeout_s)

    def ensure_ready(self) -> None:
        with self._lock:
            self._conn.executescript(SCHEMA)

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def execute(self, sql: str, args: Sequence[Any] = ()) -> None:
        with self._lock:
            self._conn.execute(sql, args)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- run log -------------------------------------------------------------
    def save(self, record: RunRecord) -> None:
        self.execute(
            "INSERT OR REPLACE INTO reindex_runs VALUES (?,?,?,?,?,?,?,?,?,?)",
            (record.run_id, record.job, record.trigger, record.holder,
             record.started_at.isoformat(),
             record.ended_at.isoformat() if record.ended_at else None, record.outcome,
             json.dumps(record.counts), record.error, int(record.dry_run)),
        )

    def last_success(self, job: str) -> RunRecord | None:
        rows = self.query(
            "SELECT * FROM reindex_runs WHERE job = ? AND outcome = 'success' "
            "AND dry_run = 0 ORDER BY ended_at DESC LIMIT 1", (job,),
        )
        return _run_from(rows[0]) if rows else None

    def recent(self, job: str, limit: int = 10) -> list[RunRecord]:
        rows = self.query(
            "SELECT * FROM reindex_runs WHERE job = ? "
            "ORDER BY started_at DESC LIMIT ?", (job, limit),
        )
        return [_run_from(r) for r in rows]

    # -- lease ---------------------------------------------------------------
    def read(self, job: str) -> tuple[LeaseRecord | None, object]:
        try:
            rows = self.query(
                "SELECT holder, token, expires_at, scheduled_started_at, seq FROM reindex_lease "
                "WHERE job = ?", (job,),
            )
        except sqlite3.Error as exc:
            raise LeaseError(f"cannot read the lease of {job!r} in {self.path}: {exc}") from exc
        if not rows:
            return None, None
        holder, token, expires, started, seq = rows[0]
        record = LeaseRecord(job, holder, token, datetime.fromisoformat(expires),
                             datetime.fromisoformat(started))
        return record, int(seq)

    def write(self, record: LeaseRecord, cas: object) -> bool:
        with self._lock:
            try:
                with sqlitedb.immediate(self._conn):
                    row = self._conn.execute(
                        "SELECT seq FROM reindex_lease WHERE job = ?", (record.job,)
                    ).fetchone()
                    if (int(row[0]) if row else None) != cas:
                        return False  # someone else wrote it first; nothing was written
                    self._conn.execute(
                        "INSERT OR REPLACE INTO reindex_lease VALUES (?,?,?,?,?,?)",
                        (record.job, record.holder, record.token, record.expires_at.isoformat(),
                         record.scheduled_started_at.isoformat(), (int(row[0]) + 1) if row else 1),
                    )
            except sqlite3.Error as exc:
                raise LeaseError(
                    f"cannot write the lease of {record.job!r} in {self.path}: {exc}"
                ) from exc
        return True


def _run_from(row: tuple[Any, ...]) -> RunRecord:
    run_id, job, trigger, holder, started, ended, outcome, counts, error, dry_run = row
    return RunRecord(
        run_id=run_id, job=job, trigger=trigger, holder=holder,
        started_at=datetime.fromisoformat(started),
        ended_at=datetime.fromisoformat(ended) if ended else None,
        outcome=outcome, counts=json.loads(counts), error=error, dry_run=bool(dry_run),
    )
