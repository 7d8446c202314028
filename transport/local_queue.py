"""The embedded event transport: a durable queue and its dead letters in one SQLite file.

A record is a row; it is deleted only when a consumer commits it, so a crash
(even SIGKILL) before the commit means the next consumer gets it again. Row
numbers never repeat (AUTOINCREMENT), so they serve as offsets. Topics are
names inside the file, like Kafka topics, each with one partition (0): the
whole topic is in order, which keeps every document's changes in order.

One consumer at a time per topic: a lease row names the holder (host, pid). On
the same host the lease is held while that process lives (however long it is
busy or backing off), so a restart after SIGKILL takes over at once; a holder
on another host (a shared file) holds it while it renews within ``lease_ttl_s``.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transport.consumer import ConsumeError, Delivery

SCHEMA = """
CREATE TABLE IF NOT EXISTS queue_records (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    topic TEXT NOT NULL,
    key BLOB,
    value BLOB,
    enqueued_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS queue_records_by_topic ON queue_records(topic, seq);
CREATE TABLE IF NOT EXISTS dead_letters (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    topic TEXT NOT NULL,
    key BLOB,
    value BLOB,
    reason TEXT NOT NULL,
    error TEXT NOT NULL,
    source_topic TEXT NOT NULL,
    source_partition INTEGER NOT NULL,
    source_offset INTEGER NOT NULL,
    dead_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS consumer_leases (
    topic TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    renewed_at REAL NOT NULL
);
"""


class QueueError(ConsumeError):
    """The queue file cannot be opened, read or written."""


class ConsumerBusy(QueueError):
    """Another live process consumes this topic."""


@dataclass(frozen=True)
class StoredDeadLetter:
    key: bytes | None
    value: bytes | None
    reason: str
    error: str
    source_topic: str
    source_partition: int
    source_offset: int
    dead_at: float


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LocalQueue:
    """The queue file. Thread-safe; share one per process so consumers wake on publish."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._new = threading.Condition()
        try:
            if self.path.parent != Path():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                str(self.path), timeout=busy_timeout_s, isolation_level=None,
                check_same_thread=False,
            )
            # Before any table exists (no effect on an older file): lets ``ack`` give
            # the pages of committed records back, so the file stays small.
            self._conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise QueueError(f"cannot open the local queue at {str(self.path)!r}: {exc}") from exc

    def _run(self, what: str, statements: Sequence[tuple[str, Sequence[Any]]],
             *, write: bool = True) -> list[sqlite3.Cursor]:
        with self._lock:
            try:
                if not write:
                    return [self._conn.execute(sql, args) for sql, args in statements]
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    cursors = [self._conn.execute(sql, args) for sql, args in statements]
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
                return cursors
            except sqlite3.Error as exc:
                raise QueueError(f"{what} in {str(self.path)!r}: SQLite: {exc}") from exc

    # -- records -----------------------------------------------------------
    def append(self, topic: str, records: Sequence[tuple[bytes | None, bytes | None]]) -> None:
        """Store the records durably, in order, in one transaction."""
        now = time.time()
        sql = "INSERT INTO queue_records(topic, key, value, enqueued_at) VALUES (?, ?, ?, ?)"
        self._run(f"append to {topic!r}", [(sql, (topic, k, v, now)) for k, v in records])
        with self._new:
            self._new.notify_all()

    def read(self, topic: str, after: int, limit: int) -> list[Delivery]:
        (cursor,) = self._run(
            f"read {topic!r}",
            [("SELECT seq, key, value FROM queue_records WHERE topic = ? AND seq > ? "
              "ORDER BY seq LIMIT ?", (topic, after, limit))],
            write=False,
        )
        return [Delivery(k, v, topic, 0, seq) for seq, k, v in cursor.fetchall()]

    def ack(self, topic: str, through: int) -> int:
        (cursor,) = self._run(
            f"commit {topic!r}",
            [("DELETE FROM queue_records WHERE topic = ? AND seq <= ?", (topic, through))],
        )
        self._free_pages()
        return cursor.rowcount

    def _free_pages(self) -> None:
        # executescript runs the pragma to the end; execute() would free one page.
        with self._lock:
            try:
                self._conn.executescript("PRAGMA incremental_vacuum;")
            except sqlite3.Error as exc:
                raise QueueError(f"free pages of {str(self.path)!r}: SQLite: {exc}") from exc

    def pending(self, topic: str) -> int:
        """Records of ``topic`` not yet committed."""
        (cursor,) = self._run(
            "count", [("SELECT count(*) FROM queue_records WHERE topic = ?", (topic,))],
            write=False,
        )
        return int(cursor.fetchall()[0][0])

    def wait_for_records(self, timeout_s: float) -> None:
        """Sleep until this process appends, or ``timeout_s`` passes (other processes)."""
        with self._new:
            self._new.wait(timeout_s)

    # -- dead letters ------------------------------------------------------
    def add_dead_letter(self, topic: str, letter: StoredDeadLetter) -> None:
        self._run(f"dead-letter to {topic!r}", [(
            "INSERT INTO dead_letters(topic, key, value, reason, error, source_topic, "
            "source_partition, source_offset, dead_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (topic, letter.key, letter.value, letter.reason, letter.error, letter.source_topic,
             letter.source_partition, letter.source_offset, letter.dead_at),
        )])

    def dead_letters(self, topic: str) -> list[StoredDeadLetter]:
        (cursor,) = self._run("list dead letters", [(
            "SELECT key, value, reason, error, source_topic, source_partition, source_offset, "
            "dead_at FROM dead_letters WHERE topic = ? ORDER BY id", (topic,),
        )], write=False)
        return [StoredDeadLetter(*row) for row in cursor.fetchall()]

    # -- the consumer lease ------------------------------------------------
    def take_lease(self, topic: str, ttl_s: float) -> None:
        """Become the topic's one consumer, or raise ``ConsumerBusy`` naming the holder."""
        host, pid, now = socket.gethostname(), os.getpid(), time.time()
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    row = self._conn.execute(
                        "SELECT host, pid, renewed_at FROM consumer_leases WHERE topic = ?",
                        (topic,),
                    ).fetchone()
                    if row is not None and (row[0], row[1]) != (host, pid):
                        if row[0] == host:  # a live process, however long it is busy
                            held_by_live = _pid_alive(int(row[1]))
                        else:  # another machine sharing the file: trust the renewals
                            held_by_live = now - row[2] < ttl_s
                        if held_by_live:
                            raise ConsumerBusy(
                                f"topic={topic!r} in {str(self.path)!r} is consumed by pid "
                                f"{row[1]} on {row[0]!r}"
                            )
                    self._conn.execute(
                        "INSERT OR REPLACE INTO consumer_leases(topic, host, pid, renewed_at) "
                        "VALUES (?, ?, ?, ?)", (topic, host, pid, now),
                    )
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise QueueError(f"lease {topic!r} in {str(self.path)!r}: {exc}") from exc

    def release_lease(self, topic: str) -> None:
        self._run("release lease", [(
            "DELETE FROM consumer_leases WHERE topic = ? AND host = ? AND pid = ?",
            (topic, socket.gethostname(), os.getpid()),
        )])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
