"""The one way the project opens a SQLite file and writes to it.

Every embedded-mode file (the index, the queue, the scheduler's run log and
lease, the folder watcher's state, the embedding cache) is opened by
``connect``: autocommit (transactions are explicit), WAL so readers never wait
for the writer, ``synchronous=NORMAL`` (durable against a process crash: only a
power cut can lose the last commits, which redelivery or a re-encoding
repairs), usable from several threads under the caller's lock. Every write is
one ``immediate`` transaction, so a SIGKILL leaves either all of it or none,
and two processes never interleave a read-then-write.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

# How long a statement waits for another connection's lock before SQLITE_BUSY; the
# default of every store file (the local queue, written by many, waits longer).
BUSY_TIMEOUT_S = 5.0


def connect(
    path: str | Path,
    *,
    busy_timeout_s: float = BUSY_TIMEOUT_S,
    before_wal: Sequence[str] = (),
) -> sqlite3.Connection:
    """A connection to ``path`` (its folder is made); ``before_wal``: pragmas to run first
    (``auto_vacuum`` must precede the first table). Raises ``OSError`` / ``sqlite3.Error``."""
    where = str(path)
    if where != ":memory:" and Path(where).parent != Path():
        Path(where).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(where, timeout=busy_timeout_s, isolation_level=None,
                           check_same_thread=False)
    try:
        for pragma in before_wal:
            conn.execute(pragma)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; ``ROLLBACK`` on any exception (then re-raised)
    unless SQLite has already rolled back.

    The caller holds its own lock: one connection is shared by threads.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")  # a COMMIT that fails leaves no transaction open either
    except BaseException:
        # SQLite rolls back by itself on some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM
        # in the middle of a statement): a ROLLBACK then would fail with "no transaction is
        # active" and hide the error that matters (a full disk read as a bug).
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
