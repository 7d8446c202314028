"""The embedding cache of the embedded mode: one SQLite file, WAL, float32 blobs.

One row per key (``text_hash``), with the model id and the vector's length
beside its little-endian float32 bytes, so a model's rows can be counted or
dropped: about 2.1 kB on disk per 384-d vector. One connection shared by threads
under a lock; a busy database (another process writing past the busy timeout) is a
``TransientEmbeddingCacheError``.
The embedded mode keeps it under ``embedded_dir`` as ``embeddings.sqlite3``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import structlog

import sqlitedb
from embeddings.cache import Vector, check_vectors, text_hash
from embeddings.errors import EmbeddingCacheError, TransientEmbeddingCacheError

FILE_NAME = "embeddings.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    key TEXT PRIMARY KEY,
    model_id TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    created_at REAL NOT NULL
)
"""
# A rowid table, not WITHOUT ROWID: a 1.5 kB vector is far above the row size where
# WITHOUT ROWID pays (it stored 4.7 kB a 384-d vector against 2.1 kB, measured).
# SQLite's default limit of host parameters is 32,766; stay well below it.
_KEYS_PER_QUERY = 500
_LE_FLOAT32 = np.dtype("<f4")
log = structlog.get_logger(__name__)


def _translate(what: str, exc: sqlite3.Error) -> EmbeddingCacheError:
    message = f"embedding cache: {what}: SQLite: {exc}"
    if isinstance(exc, sqlite3.OperationalError) and (
        "locked" in str(exc) or "busy" in str(exc)
    ):
        return TransientEmbeddingCacheError(message)
    return EmbeddingCacheError(message)


class SQLiteEmbeddingCache:
    """Implements ``embeddings.cache.EmbeddingCache`` in one SQLite file."""

    def __init__(self, path: str | Path, *,
                 busy_timeout_s: float = sqlitedb.BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            # a lost last commit after a power cut only costs a re-encoding
            self._conn = sqlitedb.connect(self.path, busy_timeout_s=busy_timeout_s)
            self._conn.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise EmbeddingCacheError(
                f"cannot open the embedding cache at {str(self.path)!r}: {exc}"
            ) from exc

    @classmethod
    def in_dir(cls, embedded_dir: str | Path) -> SQLiteEmbeddingCache:
        """The embedded mode's cache: ``<embedded_dir>/embeddings.sqlite3``."""
        return cls(Path(embedded_dir) / FILE_NAME)

    def get_many(self, model_id: str, texts: Sequence[str]) -> dict[str, Vector]:
        keys = list(dict.fromkeys(text_hash(model_id, t) for t in texts))
        found: dict[str, Vector] = {}
        with self._lock:
            try:
                for start in range(0, len(keys), _KEYS_PER_QUERY):
                    part = keys[start : start + _KEYS_PER_QUERY]
                    rows = self._conn.execute(
                        f"SELECT key, dim, vector FROM embeddings "  # noqa: S608 - only '?'s
                        f"WHERE model_id = ? AND key IN ({','.join('?' * len(part))})",
                        [model_id, *part],
                    ).fetchall()
                    for key, dim, blob in rows:
                        vector = _vector(key, dim, blob)
                        if vector is not None:
                            found[key] = vector
            except sqlite3.Error as exc:
                raise _translate(f"read {len(keys)} keys of {model_id!r}", exc) from exc
        return found

    def put_many(self, model_id: str, vectors: Mapping[str, Vector]) -> None:
        checked = check_vectors(model_id, vectors)
        if not checked:
            return
        now = time.time()
        rows = [
            (key, model_id, int(v.size), v.astype(_LE_FLOAT32).tobytes(), now)
            for key, v in checked.items()
        ]
        with self._lock:
            try:
                with sqlitedb.immediate(self._conn):
                    self._conn.executemany(
                        "INSERT OR REPLACE INTO embeddings (key, model_id, dim, vector, "
                        "created_at) VALUES (?, ?, ?, ?, ?)",
                        rows,
                    )
            except sqlite3.Error as exc:
                raise _translate(f"write {len(rows)} vectors of {model_id!r}", exc) from exc

    def count(self, model_id: str) -> int:
        """Vectors held for ``model_id`` (reports and tests)."""
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT count(*) FROM embeddings WHERE model_id = ?", (model_id,)
                ).fetchone()
            except sqlite3.Error as exc:
                raise _translate(f"count {model_id!r}", exc) from exc
        return int(row[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _vector(key: str, dim: int, blob: bytes) -> Vector | None:
    """The row's vector; a damaged row is a miss (logged), and the next write replaces it."""
    if len(blob) != 4 * dim:
        log.warning("damaged embedding cache row, treated as a miss", key=key,
                    bytes=len(blob), dim=dim)
        return None
    return np.frombuffer(blob, dtype=_LE_FLOAT32).astype(np.float32)
