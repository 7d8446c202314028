"""What the folder watcher has published, kept in a small SQLite file across restarts.

One row per document id the watcher ever published: the last version it sent,
whether that was a delete, the hash of the content it sent, and the file's
path, size and modification time at that moment (so an unchanged file is not
read again). The rows of deleted documents are kept: they are what makes the
version of a document created again after a delete keep growing.

Why a file of its own rather than only the index: the index lags the queue.
Events published just before a stop may still wait in the queue at the next
start; a version computed from the index alone could then repeat a version
already queued with other content, and the version guard would drop the later
change. The index is still read (see ``watcher.watch``): its version is a
floor, so the watcher never sends a version the index would skip.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

import sqlitedb
from sources.errors import SourceUnavailableError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS published (
    document_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    deleted INTEGER NOT NULL,
    content_hash TEXT,
    relative_path TEXT,
    size INTEGER,
    mtime_ns INTEGER
)
"""


@dataclass(frozen=True, slots=True)
class Published:
    """The last change the watcher published for one document."""

    document_id: str
    version: int
    deleted: bool
    content_hash: str | None = None
    relative_path: str | None = None
    size: int | None = None
    mtime_ns: int | None = None


class WatchState:
    """The watcher's memory; ``":memory:"`` keeps it in memory (tests)."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:
            self._conn = sqlitedb.connect(path)
            self._conn.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise SourceUnavailableError(
                f"cannot open the folder watcher's state {str(path)!r}: {exc}"
            ) from exc

    def load(self) -> dict[str, Published]:
        with self._lock:
            try:
                rows = self._conn.execute(
                    "SELECT document_id, version, deleted, content_hash, relative_path, size, "
                    "mtime_ns FROM published"
                ).fetchall()
            except sqlite3.Error as exc:
                raise SourceUnavailableError(f"cannot read {str(self.path)!r}: {exc}") from exc
        return {row[0]: Published(row[0], row[1], bool(row[2]), *row[3:]) for row in rows}

    def record(self, published: Published) -> None:
        p = published
        with self._lock:
            try:
                self._conn.execute(
                    "INSERT OR REPLACE INTO published VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (p.document_id, p.version, int(p.deleted), p.content_hash,
                     p.relative_path, p.size, p.mtime_ns),
                )
            except sqlite3.Error as exc:
                raise SourceUnavailableError(f"cannot write {str(self.path)!r}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()
