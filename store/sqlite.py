"""The embedded store: chunks, document states and FTS5 keyword search in one SQLite file.

Standard library only (``sqlite3``), WAL mode so readers never wait for the
writer. One connection per store, shared by threads under a lock; every write
is one ``BEGIN IMMEDIATE`` transaction, so a SIGKILL leaves either all of a
call's rows or none. A busy database (another process writing), a full disk, an I/O
error or a file that cannot be opened surface as ``StoreUnavailableError`` (transient) and
the worker retries while it lasts; a file that is not a database
(or a newer schema) as ``StoreSetupError``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlitedb
from chunker.model import Chunk
from store.base import MAX_KEYWORD_BYTES, keyword_too_long
from store.errors import (
    RejectedDocumentError,
    StoreError,
    StoreSetupError,
    StoreUnavailableError,
)
from store.model import ChunkRef, DocumentState
from store.search import SearchHit, SearchQueryError, fts5_match
from store.search_index import check_labels
from store.sqlite_rows import chunk_rows, filter_rows, search_rows, term_rows
from store.sqlite_schema import (
    ADD_OWNER,
    DELETE_CHUNKS,
    GET_STATE,
    LIST_STATES,
    PUT_STATE,
    SCHEMA,
    SCHEMA_VERSION,
    SEARCH,
    SEARCH_SCHEMA,
    caller_labels_param,
)

_PAGE = 1000
# Rows a multi-row statement takes at most (``store.sqlite_schema`` says why they are
# many); fewer where the SQLite build allows fewer parameters a statement.
_ROWS_PER_STATEMENT = 500
MAX_SEARCH_LIMIT = 1000


def connect(path: str | Path, *,
            busy_timeout_s: float = sqlitedb.BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """``sqlitedb.connect`` with foreign keys on (a vector goes with its chunk)."""
    conn = sqlitedb.connect(path, busy_timeout_s=busy_timeout_s)
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


# Primary result codes of a store that cannot take a request for now, whatever the event:
# SQLITE_BUSY (5) and SQLITE_LOCKED (6) beyond busy_timeout, SQLITE_NOMEM (7), SQLITE_IOERR (10,
# every extended code: EFBIG, EIO, a lost mount), SQLITE_FULL (13: "database or disk is full"),
# SQLITE_CANTOPEN (14: "unable to open database file", the -wal or -shm cannot be made).
UNAVAILABLE_CODES = frozenset({5, 6, 7, 10, 13, 14})
UNAVAILABLE_MESSAGES = ("locked", "busy", "database or disk is full", "disk i/o error",
                        "unable to open database file", "out of memory")


def translate(what: str, exc: sqlite3.Error) -> StoreError:
    """A SQLite error in the ``store.errors`` tree: ``StoreUnavailableError`` (retried while it
    lasts) for a full disk, an I/O error, a lock or a file that cannot be opened; a plain
    ``StoreError`` (a bug: the event is tried a few times, then dead-lettered) otherwise."""
    message = f"{what}: SQLite: {exc}"
    code = getattr(exc, "sqlite_errorcode", None)
    if (isinstance(code, int) and code & 0xFF in UNAVAILABLE_CODES) or (
        isinstance(exc, sqlite3.OperationalError)
        and any(m in str(exc).lower() for m in UNAVAILABLE_MESSAGES)
    ):
        return StoreUnavailableError(message)
    return StoreError(message)


class SQLiteStore:
    """Implements ``store.base.Store``; also ``search`` and ``close``."""

    def __init__(self, path: str | Path, *,
                 busy_timeout_s: float = sqlitedb.BUSY_TIMEOUT_S) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self._conn = connect(self.path, busy_timeout_s=busy_timeout_s)
        except (OSError, sqlite3.Error) as exc:
            raise StoreSetupError(
                f"cannot open the SQLite store at {str(self.path)!r}: {exc}"
            ) from exc
        widest = 7  # parameters of a chunk's row
        self._per_statement = max(1, min(
            _ROWS_PER_STATEMENT,
            self._conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // widest,
        ))

    # -- plumbing ----------------------------------------------------------
    @contextmanager
    def _transaction(self, what: str) -> Iterator[None]:
        """One write transaction under the store's lock; an SQLite error is ``translate``d."""
        with self._lock:
            try:
                with sqlitedb.immediate(self._conn):
                    yield
            except sqlite3.Error as exc:
                raise translate(what, exc) from exc

    def _run(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[int]:
        """Each statement's changed rows (the caller holds a transaction)."""
        return [self._conn.execute(sql, args).rowcount for sql, args in statements]

    def _write(self, what: str, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[int]:
        """Run the statements in one transaction; returns each one's changed rows."""
        with self._transaction(what):
            return self._run(statements)

    def _write_overlapped(
        self,
        what: str,
        first: Sequence[tuple[str, Sequence[Any]]],
        then: Callable[[], Sequence[tuple[str, Sequence[Any]]]],
    ) -> list[int]:
        """``_write(first + then())`` in one transaction, ``then`` computed while SQLite runs
        ``first``: a statement releases the GIL, so the Python work of ``then`` (the terms of
        a write) overlaps SQLite's (the chunk rows and their FTS5 index), on a second core.

        ``first`` runs in a short-lived thread on this connection; this thread holds the lock
        and touches the connection again only once that thread is done.
        """
        done: list[int] = []
        failed: list[BaseException] = []

        def run_first() -> None:
            try:
                done.extend(self._run(first))
            except BaseException as exc:  # raised in the caller's thread
                failed.append(exc)

        with self._transaction(what):
            worker = threading.Thread(target=run_first, name="sqlite-write", daemon=True)
            worker.start()
            try:
                later = then()
            finally:
                worker.join()
            if failed:
                raise failed[0]
            return done + self._run(later)

    def _read(self, what: str, sql: str, args: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise translate(what, exc) from exc

    # -- set-up ------------------------------------------------------------
    def ensure_ready(self) -> None:
        with self._lock:
            try:
                self._add_owner_column()
                self._conn.executescript(SCHEMA)
                self._conn.executescript(SEARCH_SCHEMA)
                self._conn.execute(
                    "INSERT OR IGNORE INTO store_meta(key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
                row = self._conn.execute(
                    "SELECT value FROM store_meta WHERE key = 'schema_version'"
                ).fetchone()
            except sqlite3.Error as exc:
                raise StoreSetupError(
                    f"cannot create the tables in {str(self.path)!r}: {exc}"
                ) from exc
        if row is None or int(row[0]) > SCHEMA_VERSION:
            raise StoreSetupError(
                f"{str(self.path)!r} has schema_version={row and row[0]!r}; "
                f"this program knows up to {SCHEMA_VERSION}"
            )
        if int(row[0]) < SCHEMA_VERSION:
            self._add_search_rows()

    def _add_owner_column(self) -> None:
        """A file made before schema 3: its ``document_states`` gain ``owner`` (NULL: unowned).

        Idempotent and before ``SCHEMA``, so an existing table is altered in place (its
        ``CREATE TABLE IF NOT EXISTS`` would leave it as it is); the caller holds the lock.
        """
        columns = {row[1] for row in self._conn.execute("PRAGMA table_info(document_states)")}
        if columns and "owner" not in columns:
            with sqlitedb.immediate(self._conn):
                self._conn.execute(ADD_OWNER)

    def _add_search_rows(self) -> None:
        """A store made before the search side: give each chunk its search rows, once."""
        rows = self._read(
            "chunks without search rows",
            "SELECT c.body FROM chunks AS c WHERE NOT EXISTS "
            "(SELECT 1 FROM chunk_filters AS f WHERE f.rowid = c.rowid)",
        )
        chunks = [Chunk.model_validate_json(body) for (body,) in rows]
        statements = search_rows(chunks, self._per_statement)
        statements.append((
            "UPDATE store_meta SET value = ? WHERE key = 'schema_version'",
            (str(SCHEMA_VERSION),),
        ))
        self._write("add search rows", statements)

    # -- document states ---------------------------------------------------
    def get_state(self, document_id: str) -> DocumentState | None:
        rows = self._read(
            f"get state of {document_id!r}",
            GET_STATE,
            (document_id,),
        )
        return _state_from_row(rows[0]) if rows else None

    def put_state(self, state: DocumentState) -> bool:
        (changed,) = self._write(
            f"put state of {state.document_id!r}", [(PUT_STATE, _state_args(state))]
        )
        return changed == 1

    def get_states(self, document_ids: Sequence[str]) -> dict[str, DocumentState]:
        """States of many documents in one read (``store.batch``)."""
        found: dict[str, DocumentState] = {}
        with self._lock:
            try:
                for doc in dict.fromkeys(document_ids):
                    row = self._conn.execute(GET_STATE, (doc,)).fetchall()
                    if row:
                        found[doc] = _state_from_row(row[0])
            except sqlite3.Error as exc:
                raise translate("get states", exc) from exc
        return found

    def put_states(self, states: Sequence[DocumentState]) -> set[str]:
        """Many guarded ``put_state`` in one transaction; returns the ids that lost."""
        if not states:
            return set()
        counts = self._write("put states", [(PUT_STATE, _state_args(s)) for s in states])
        return {s.document_id for s, n in zip(states, counts, strict=True) if n != 1}

    def find_chunks_below(self, versions: dict[str, int]) -> list[ChunkRef]:
        """``find_chunks(doc, below_version=v)`` for many documents in one read."""
        refs: list[ChunkRef] = []
        with self._lock:
            try:
                for doc, version in versions.items():
                    rows = self._conn.execute(
                        "SELECT chunk_id, document_id, version, indexed_at FROM chunks "
                        "WHERE document_id = ? AND version < ? ORDER BY chunk_id",
                        (doc, version),
                    ).fetchall()
                    refs.extend(_ref_from_row(r) for r in rows)
            except sqlite3.Error as exc:
                raise translate("find chunks", exc) from exc
        return refs

    def iter_states(self) -> Iterator[DocumentState]:
        after = ""
        while True:
            rows = self._read(
                "list states",
                LIST_STATES,
                (after, _PAGE),
            )
            yield from (_state_from_row(r) for r in rows)
            if len(rows) < _PAGE:
                return
            after = rows[-1][0]

    # -- chunks ------------------------------------------------------------
    def write_chunks(self, chunks: Sequence[Chunk]) -> int:
        indexed_at = datetime.now(UTC).isoformat()
        refused = [c.chunk_id for c in chunks if keyword_too_long(c) is not None]
        kept = [c for c in chunks if c.chunk_id not in refused]
        # An id given twice is written once: at its first place, with its last chunk.
        distinct = list({c.chunk_id: c for c in kept}.values())
        if distinct:
            per = self._per_statement
            self._write_overlapped(
                "write chunks",
                [*chunk_rows(distinct, indexed_at, per), *filter_rows(distinct, per)],
                lambda: term_rows(distinct, per),
            )
        if refused:
            raise RejectedDocumentError(
                f"keyword longer than {MAX_KEYWORD_BYTES} bytes in chunks {refused[:3]}",
                item_ids=tuple(refused),
            )
        return len(kept)

    def delete_chunks(self, chunk_ids: Iterable[str]) -> int:
        unique = list(dict.fromkeys(chunk_ids))
        if not unique:
            return 0
        per = self._per_statement
        counts = self._write("delete chunks", [
            (DELETE_CHUNKS.format(params=", ".join("?" * len(part))), part)
            for part in (unique[start:start + per] for start in range(0, len(unique), per))
        ])
        return sum(counts)

    def find_chunks(
        self, document_id: str, *, below_version: int | None = None
    ) -> Iterator[ChunkRef]:
        rows = self._read(
            f"find chunks of {document_id!r}",
            "SELECT chunk_id, document_id, version, indexed_at FROM chunks "
            "WHERE document_id = ? AND version < ? ORDER BY chunk_id",
            (document_id, below_version if below_version is not None else 2**63 - 1),
        )
        return iter([_ref_from_row(r) for r in rows])

    def iter_chunks(self) -> Iterator[ChunkRef]:
        after = ""
        while True:
            rows = self._read(
                "list chunks",
                "SELECT chunk_id, document_id, version, indexed_at FROM chunks "
                "WHERE chunk_id > ? ORDER BY chunk_id LIMIT ?",
                (after, _PAGE),
            )
            yield from (_ref_from_row(r) for r in rows)
            if len(rows) < _PAGE:
                return
            after = rows[-1][0]

    def count_chunks(self) -> dict[str, int]:
        """Chunks present per document (status, reconcile)."""
        rows = self._read(
            "count chunks", "SELECT document_id, count(*) FROM chunks GROUP BY document_id"
        )
        return {doc: int(n) for doc, n in rows}

    # -- search ------------------------------------------------------------
    def search(
        self, text: str, *, access_labels: Sequence[str], limit: int = 10
    ) -> list[SearchHit]:
        """Chunks of current document versions matching any word of ``text``, best first.

        Ranked by BM25 over ``embed_text``; only chunks whose every access label
        is in ``access_labels`` are considered (see ``store.search``).
        """
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise SearchQueryError(f"limit={limit!r}: must be between 1 and {MAX_SEARCH_LIMIT}")
        labels = check_labels(access_labels)  # before the query: a bad label matches nothing
        match = fts5_match(text)
        if match is None:
            return []
        rows = self._read(
            "search",
            SEARCH,
            {"match": match, "caller_labels": caller_labels_param(labels), "limit": limit},
        )
        return [SearchHit(Chunk.model_validate_json(body), float(score)) for body, score in rows]

    def refresh(self) -> None:
        return None  # every committed write is visible at once

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _state_args(state: DocumentState) -> tuple[Any, ...]:
    return (
        state.document_id, state.version, state.changed_at.isoformat(),
        state.indexed_at.isoformat(), json.dumps(list(state.chunk_ids)),
        json.dumps(list(state.superseded_chunk_ids)), state.content_hash, int(state.deleted),
        state.owner,
    )


def _ref_from_row(row: tuple[str, str, int, str]) -> ChunkRef:
    chunk_id, document_id, version, indexed_at = row
    return ChunkRef(chunk_id, document_id, int(version), datetime.fromisoformat(indexed_at))


def _state_from_row(row: tuple[Any, ...]) -> DocumentState:
    doc, version, changed_at, indexed_at, chunk_ids, superseded, digest, deleted, owner = row
    return DocumentState(
        document_id=doc,
        version=int(version),
        changed_at=datetime.fromisoformat(changed_at),
        indexed_at=datetime.fromisoformat(indexed_at),
        chunk_ids=tuple(json.loads(chunk_ids)),
        content_hash=digest,
        deleted=bool(deleted),
        superseded_chunk_ids=tuple(json.loads(superseded)),
        owner=owner,
    )
