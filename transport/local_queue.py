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
A holder that died (or is a zombie nobody reaped yet, as after ``kill -9`` under a
parent that has not waited for it) is gone.

Dead letters are kept once per failed event: each carries a ``fingerprint`` (see
``dead_letter_fingerprint``), unique per topic, so the redelivery of an event
that was dead-lettered but not yet committed when the process died, or a
source sending the same bad document again at each start, adds nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlitedb
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


# Files made before dead letters had a fingerprint get the column (NULL for old rows,
# which UNIQUE treats as distinct, so nothing old is lost).
_DEAD_LETTER_FINGERPRINT = """
CREATE UNIQUE INDEX IF NOT EXISTS dead_letters_once ON dead_letters(topic, fingerprint);
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


def dead_letter_fingerprint(key: bytes | None, value: bytes | None, reason: str) -> str:
    """What makes two dead letters the same failed event: the key, the reason and the value
    without what differs between two sends of one change (``event_id``, ``received_at``)."""
    body = value
    if value is not None:
        try:
            parsed = json.loads(value)
        except (ValueError, UnicodeDecodeError):
            parsed = None
        if isinstance(parsed, dict):
            parsed.pop("event_id", None)
            parsed.pop("received_at", None)
            body = json.dumps(parsed, sort_keys=True).encode("utf-8")
    digest = hashlib.sha256()
    for part in (key, body, reason.encode("utf-8")):
        digest.update(b"-" if part is None else b"+%d:" % len(part) + part)
    return digest.hexdigest()


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs: a process that exited, even one still a zombie, does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie still answers kill(0); its state in /proc says it is dead
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True  # no /proc (not Linux), or it went meanwhile: kill(0) said it was there
    state = stat.rpartition(")")[2].split()[:1]  # after "(comm)", which may hold spaces
    return state not in (["Z"], ["X"])


class LocalQueue:
    """The queue file. Thread-safe; share one per process so consumers wake on publish."""

    def __init__(self, path: str | Path, *, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._new = threading.Condition()
        try:
            # auto_vacuum before any table exists (no effect on an older file): lets
            # ``ack`` give the pages of committed records back, so the file stays small.
            self._conn = sqlitedb.connect(self.path, busy_timeout_s=busy_timeout_s,
                                          before_wal=["PRAGMA auto_vacuum=INCREMENTAL"])
            self._conn.executescript(SCHEMA)
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(dead_letters)")}
            if "fingerprint" not in columns:
                self._conn.execute("ALTER TABLE dead_letters ADD COLUMN fingerprint TEXT")
            self._conn.executescript(_DEAD_LETTER_FINGERPRINT)
        except (OSError, sqlite3.Error) as exc:
            raise QueueError(f"cannot open the local queue at {str(self.path)!r}: {exc}") from exc

    def _run(self, what: str, statements: Sequence[tuple[str, Sequence[Any]]],
             *, write: bool = True) -> list[sqlite3.Cursor]:
        with self._lock:
            try:
                if not write:
                    return [self._conn.execute(sql, args) for sql, args in statements]
                with sqlitedb.immediate(self._conn):
                    return [self._conn.execute(sql, args) for sql, args in statements]
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

    def wake(self) -> None:
        """End every ``wait_for_records`` of this process now (a consumer that stops)."""
        with self._new:
            self._new.notify_all()

    # -- dead letters ------------------------------------------------------
    def add_dead_letter(self, topic: str, letter: StoredDeadLetter) -> bool:
        """Keep the letter; False when the same failed event is already there (see above)."""
        fingerprint = dead_letter_fingerprint(letter.key, letter.value, letter.reason)
        (cursor,) = self._run(f"dead-letter to {topic!r}", [(
            "INSERT OR IGNORE INTO dead_letters(topic, key, value, reason, error, source_topic, "
            "source_partition, source_offset, dead_at, fingerprint) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (topic, letter.key, letter.value, letter.reason, letter.error, letter.source_topic,
             letter.source_partition, letter.source_offset, letter.dead_at, fingerprint),
        )])
        return cursor.rowcount == 1

    def dead_letters(self, topic: str) -> list[StoredDeadLetter]:
        return [letter for _id, letter in self.numbered_dead_letters(topic)]

    def numbered_dead_letters(self, topic: str) -> list[tuple[int, StoredDeadLetter]]:
        """The dead letters of ``topic`` with their row ids (what ``retry`` names), oldest first."""
        (cursor,) = self._run("list dead letters", [(
            "SELECT id, key, value, reason, error, source_topic, source_partition, "
            "source_offset, dead_at FROM dead_letters WHERE topic = ? ORDER BY id", (topic,),
        )], write=False)
        return [(row[0], StoredDeadLetter(*row[1:])) for row in cursor.fetchall()]

    def requeue_dead_letters(self, topic: str, to_topic: str, ids: Sequence[int]) -> int:
        """Move dead letters back onto ``to_topic`` (original key and value), in one transaction.

        Each is removed from the dead letters as it is appended, so a retry that fails
        again is a new dead letter, and a crash leaves each in exactly one place.
        """
        statements: list[tuple[str, Sequence[Any]]] = []
        now = time.time()
        for letter_id in ids:
            statements.append((
                "INSERT INTO queue_records(topic, key, value, enqueued_at) "
                "SELECT ?, key, value, ? FROM dead_letters WHERE topic = ? AND id = ?",
                (to_topic, now, topic, letter_id),
            ))
            statements.append(("DELETE FROM dead_letters WHERE topic = ? AND id = ?",
                               (topic, letter_id)))
        cursors = self._run(f"retry dead letters of {topic!r}", statements)
        moved = sum(c.rowcount for c in cursors[1::2])
        with self._new:
            self._new.notify_all()
        return moved

    # -- the consumer lease ------------------------------------------------
    def take_lease(self, topic: str, ttl_s: float) -> None:
        """Become the topic's one consumer, or raise ``ConsumerBusy`` naming the holder."""
        host, pid, now = socket.gethostname(), os.getpid(), time.time()
        with self._lock:
            try:
                with sqlitedb.immediate(self._conn):
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
