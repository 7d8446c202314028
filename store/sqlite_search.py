"""Search over ``SQLiteStore``: FTS5 over analysed terms, numpy cosine over stored vectors.

Every filter is in the SQL (``store.sqlite_schema.FILTERS``). Both legs rank
first and check the filters on row ids after, a block at a time, in rank
order, so the result is exactly the best rows the filters allow while the
filters (joins and ``json_each`` per row) run on a few hundred rows instead
of every match:

- the keyword leg is FTS5's BM25 over ``chunk_terms`` (terms analysed in
  Python, see ``store.search_terms``). FTS5 ranks every match by itself (one
  table, no join: 6 ms for 5,000 matches at 10k chunks, where the same query
  joined to the filters took 20-40 ms); the best ``4 * limit`` row ids are
  checked against the filters, and only when fewer than ``limit`` of them pass
  (a caller who sees a small part of the library) does the leg fall back to
  one query with the filters inside, ranked the same way. Every analysed term
  of the question stays in the query: leaving out the common ones halves the
  leg at 100k chunks but loses recall (docs/search.md). The ranking itself
  comes from an in-memory copy of FTS5's postings (``store.search_postings``:
  the same BM25, bit for bit, in numpy), kept like the vectors until the data
  changes; while it is not current, FTS5 ranks. The copy is read on a thread
  of its own, over a read-only connection of its own (``_postings``), so no
  search and no writer waits the seconds it takes.
- the dense leg reads the float32 vectors of the model once, keeps them until
  the database changes, and ranks them all by dot product (vectors are unit
  length): linear in the chunks, 1.5 kB of memory and one dot product per
  chunk and query (docs/search.md has the figures and where it stops being
  fine).

Ties rank by row id (write order) on both legs. Only the bodies of the rows
returned are read and parsed.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import structlog

from chunker.model import Chunk
from store.search import SearchHit
from store.search_index import SearchFilters, Vector, check_limit, vector_rows
from store.search_postings import Postings
from store.search_terms import text_to_embed
from store.sqlite import SQLiteStore, translate
from store.sqlite_schema import (
    ADMITTED_ROWIDS,
    BY_IDS,
    FILTERED,
    FILTERS,
    LIVE_JOIN,
    MISSING_VECTORS,
    caller_labels_param,
)

MAX_TERMS = 256
# The first block of ranked rows checked against the filters: FIRST_BLOCK * limit rows.
FIRST_BLOCK = 4
MIN_BLOCK = 64

# FTS5 alone: every match ranked by BM25 inside the virtual table, no join per match.
RANKED_MATCHES = """
SELECT rowid, bm25(chunk_terms) AS score FROM chunk_terms
WHERE chunk_terms MATCH :match
ORDER BY score, rowid LIMIT :limit
"""
# The same ranking with every filter inside: the fallback when the first block of
# ranked rows holds fewer than ``limit`` that the caller may see.
FILTERED_MATCHES = f"""
SELECT chunk_terms.rowid, bm25(chunk_terms) AS score
FROM chunk_terms JOIN chunks AS c ON c.rowid = chunk_terms.rowid
{LIVE_JOIN}
WHERE chunk_terms MATCH :match AND {FILTERS}
ORDER BY score, chunk_terms.rowid LIMIT :limit
"""  # noqa: S608 - constant SQL, every value is a parameter
# The table's terms and FTS5's vocabulary of them (term, rows, occurrences), read in one
# snapshot for the in-memory copy (``store.search_postings``).
VOCABULARY_TABLE = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.chunk_terms_vocabulary "
    "USING fts5vocab(main, chunk_terms, row)"
)
ALL_TERMS = "SELECT rowid, terms FROM chunk_terms ORDER BY rowid"
VOCABULARY = "SELECT term, doc, cnt FROM temp.chunk_terms_vocabulary"
BODIES = "SELECT rowid, body FROM chunks WHERE rowid IN (SELECT value FROM json_each(?))"
# The background reader's connection waits this long for a lock (WAL readers rarely wait).
READER_BUSY_TIMEOUT_S = 5.0

log = structlog.get_logger(__name__)

DataKey = tuple[int, int]


def read_snapshot(
    conn: sqlite3.Connection,
) -> tuple[list[tuple[int, str]], list[tuple[str, int, int]]]:
    """Every row's terms and FTS5's vocabulary of them, in one read snapshot of ``conn``.

    The vocabulary is a temp table, and temp tables belong to one connection: it is
    made on ``conn`` itself. Raises ``sqlite3.Error``.
    """
    conn.execute(VOCABULARY_TABLE)
    conn.execute("BEGIN")  # the terms and the vocabulary of one snapshot
    try:
        rows = conn.execute(ALL_TERMS).fetchall()
        vocabulary = conn.execute(VOCABULARY).fetchall()
    finally:
        conn.execute("COMMIT")
    return rows, vocabulary


def read_postings(conn: sqlite3.Connection) -> Postings | None:
    """The in-memory copy from one snapshot of ``conn`` (None: FTS5 holds the terms
    otherwise, see ``Postings.build``). Raises ``sqlite3.Error``.

    Built with a pause that lets the GIL go between batches of rows: this runs on the
    reader's thread, and a search on another thread should not wait its turn.
    """
    return Postings.build(*read_snapshot(conn), pause=_let_the_gil_go)


def _let_the_gil_go() -> None:
    time.sleep(0)  # releases the GIL: a waiting thread takes it now


def open_read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection to the store's file: the background reader's own, so it
    never takes the store's connection or lock, and cannot write by mistake."""
    return sqlite3.connect(
        path.resolve().as_uri() + "?mode=ro", uri=True, timeout=READER_BUSY_TIMEOUT_S,
        isolation_level=None,
    )


def _opens_twice(path: Path) -> bool:
    """An in-memory database is private to its one connection: no second one sees it."""
    return str(path) != ":memory:"


def _params(filters: SearchFilters) -> dict[str, Any]:
    labels = filters.caller_labels
    return {
        "as_of": filters.as_of.isoformat(),
        "any_scope": int(not filters.scope),
        "scope": json.dumps(list(filters.scope)),
        "no_permission": int(labels is None),
        "caller_labels": caller_labels_param(labels or ()),
    }


def _match(terms: Sequence[str]) -> str | None:
    """Any of the terms, each quoted: no input can turn into FTS5 syntax."""
    unique = list(dict.fromkeys(t for t in terms if t))[:MAX_TERMS]
    if not unique:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)


def _best(scores: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.intp]:
    """Indexes of the ``count`` best scores, best first, ties in index order: the prefix of
    a stable descending sort, without sorting every score (a partition finds the cut)."""
    if count >= len(scores):
        return np.argsort(-scores, kind="stable")
    cut = np.partition(scores, len(scores) - count)[len(scores) - count]
    above = np.flatnonzero(scores >= cut)  # every tie at the cut, in index order
    return above[np.argsort(-scores[above], kind="stable")][:count]


class SQLiteSearchIndex:
    """Implements ``SearchIndex`` and ``VectorStore`` over a ``SQLiteStore``.

    ``keyword_fallbacks`` counts keyword searches that needed the filtered query
    (the first ranked block held too few rows the caller may see).

    ``read_copy`` reads the keyword leg's copy over the connection it is given (the
    background reader's own); tests pass one that waits or fails. ``close`` stops and
    joins that reader; the store is the caller's to close.
    """

    def __init__(
        self,
        store: SQLiteStore,
        *,
        read_copy: Callable[[sqlite3.Connection], Postings | None] = read_postings,
    ) -> None:
        self.store = store
        self.keyword_fallbacks = 0
        self._cache: dict[str, tuple[
            DataKey, npt.NDArray[np.int64], npt.NDArray[np.float32], npt.NDArray[np.intp]
        ]] = {}
        self._read_copy = read_copy
        # The keyword leg's in-memory postings, with the data key they were read at, the
        # data key the previous keyword search saw, and the reader of the next copy with
        # its connection (see ``_postings``); all under ``_guard``, held for microseconds.
        self._guard = threading.Lock()
        self._copy: tuple[DataKey, Postings | None] | None = None
        self._last_key: DataKey | None = None
        self._reader: threading.Thread | None = None
        self._reader_conn: sqlite3.Connection | None = None
        self._closed = False

    def keyword_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[SearchHit]:
        check_limit(limit)
        match = _match(terms)
        if match is None:
            return []
        params = _params(filters)
        block = max(FIRST_BLOCK * limit, MIN_BLOCK)
        ranked = self._ranked(list(dict.fromkeys(t for t in terms if t))[:MAX_TERMS], block)
        if ranked is None:
            ranked = self.store._read(
                "keyword ranking", RANKED_MATCHES, {"match": match, "limit": block}
            )
        admitted = self._admitted([rowid for rowid, _ in ranked], params)
        picked: list[tuple[int, float]] = [(r, s) for r, s in ranked if r in admitted]
        if len(picked) < limit and len(ranked) == block:
            self.keyword_fallbacks += 1
            picked = self.store._read(
                "keyword search", FILTERED_MATCHES, {**params, "match": match, "limit": limit}
            )
        return self._hits([(rowid, -float(score)) for rowid, score in picked[:limit]])

    def _ranked(self, terms: list[str], limit: int) -> list[tuple[int, float]] | None:
        """``RANKED_MATCHES`` from the in-memory postings, or None: then FTS5 answers."""
        postings = self._postings()
        return None if postings is None else postings.rank(terms, limit)

    def _postings(self) -> Postings | None:
        """The keyword leg's in-memory copy of FTS5's postings, when it is current.

        Like the vectors it is kept until the data key (``_data_key``) moves: a write
        here or in another process, so it is never stale. Reading it costs seconds at
        100k chunks, so it is read only when the data has not moved since the previous
        keyword search (while a worker writes, a copy would be stale at once), and on
        a thread of its own over a read-only connection of its own: not the store's
        connection, not under the store's lock, so no search and no writer waits for
        it. Until it is current every search asks FTS5: the same answer, FTS5's cost.
        At most one read runs at a time; a copy whose key no longer matches is dropped.

        Why a copy labelled K is right when used: K is taken from the store's
        connection *before* the reader's snapshot starts, so the snapshot holds K's
        data or newer. If newer, something committed after K was taken, so the key
        has moved past K (the store's own writes move ``total_changes``, any other
        connection's commit moves ``data_version``; neither goes back) and the copy
        labelled K never matches a key again: it is never used.

        An in-memory database (``:memory:``) cannot be opened a second time: there the
        copy is read in line, on the store's connection under its lock, as before.
        """
        key = self._data_key()
        with self._guard:
            copy = self._copy
            if copy is not None:
                if copy[0] == key:
                    return copy[1]
                self._copy = None  # its key has moved: it never matches again
            if key != self._last_key:
                self._last_key = key
                return None
            if self._closed or (self._reader is not None and self._reader.is_alive()):
                return None
            if _opens_twice(self.store.path):
                # A daemon: a process that ends without close() does not wait for it,
                # and it holds nothing of the store's (its own read-only connection).
                self._reader = threading.Thread(
                    target=self._read_in_background, args=(key,),
                    name="keyword-postings-reader", daemon=True,
                )
                self._reader.start()
                return None
        return self._read_in_line(key)

    def _read_in_line(self, key: DataKey) -> Postings | None:
        """The copy read on the store's own connection (an in-memory store has no other)."""
        with self.store._lock:
            try:
                rows, vocabulary = read_snapshot(self.store._conn)
            except sqlite3.Error as exc:
                raise translate("read keyword postings", exc) from exc
        postings = Postings.build(rows, vocabulary)
        with self._guard:
            self._copy = (key, postings)
        return postings

    def _read_in_background(self, key: DataKey) -> None:
        """The reader thread: the copy labelled ``key``, kept if no search saw a newer key.

        A failure is logged and changes nothing: FTS5 keeps answering, and the next
        search that finds the data unchanged starts another read.
        """
        try:
            conn = open_read_only(self.store.path)
            try:
                with self._guard:
                    self._reader_conn = conn
                    closed = self._closed
                postings = None if closed else self._read_copy(conn)
            finally:
                with self._guard:
                    self._reader_conn = None
                conn.close()
        except Exception as exc:  # a thread's boundary: logged here, or lost
            if not self._closed:  # close() interrupts a read on purpose
                log.error(
                    "keyword postings read failed; FTS5 answers",
                    path=str(self.store.path), data_key=list(key),
                    error=f"{type(exc).__name__}: {exc}",
                )
            return
        with self._guard:
            if not self._closed and self._last_key == key:
                self._copy = (key, postings)

    def close(self) -> None:
        """Stop a copy being read (its SQL is interrupted) and wait for its thread.

        Idempotent. Searches after it ask FTS5 (and the store, which the caller closes).
        """
        with self._guard:
            self._closed = True
            self._copy = None
            reader = self._reader
            if self._reader_conn is not None:
                self._reader_conn.interrupt()
        if reader is not None:
            reader.join()

    def _admitted(self, rowids: list[int], params: dict[str, Any]) -> set[int]:
        """Those of ``rowids`` that every filter admits (current version, scope, date, labels)."""
        if not rowids:
            return set()
        return {r for (r,) in self.store._read(
            "filter candidates", ADMITTED_ROWIDS, {**params, "rowids": json.dumps(rowids)}
        )}

    def _hits(self, scored: list[tuple[int, float]]) -> list[SearchHit]:
        """Hits for (rowid, score) pairs, in their order: only these bodies are read."""
        if not scored:
            return []
        bodies = dict(self.store._read(
            "read hits", BODIES, (json.dumps([rowid for rowid, _ in scored]),)
        ))
        return [
            SearchHit(Chunk.model_validate_json(bodies[rowid]), score)
            for rowid, score in scored
            if rowid in bodies  # deleted between the two reads
        ]

    def vector_search(
        self, model_id: str, vector: Vector, filters: SearchFilters, limit: int
    ) -> list[SearchHit]:
        check_limit(limit)
        query = np.asarray(vector, dtype=np.float32)
        rowids, matrix, starts = self._vectors(model_id, query.shape[0])
        if not len(rowids):
            return []
        # a chunk scores by its best row (one row, or one per window); rows of a chunk are
        # contiguous (read in rowid order), ``starts`` is where each chunk's rows begin
        rows = matrix @ query
        scores = rows if len(starts) == len(rows) else np.maximum.reduceat(rows, starts)
        # Walk the global order, checking the filters in SQL a block at a time (blocks grow
        # 4x): the first `limit` rows that pass are exactly the best `limit` the filters
        # allow, and the usual search reads a few dozen rows, not every row's filters.
        params = _params(filters)
        picked: list[int] = []  # indexes into rowids, best first
        start, step = 0, max(FIRST_BLOCK * limit, MIN_BLOCK)
        while len(picked) < limit and start < len(scores):
            block = _best(scores, start + step)[start:]
            start, step = start + step, step * 4
            admitted = self._admitted([int(rowids[i]) for i in block], params)
            picked += [int(i) for i in block if int(rowids[i]) in admitted]
        return self._hits([(int(rowids[i]), float(scores[i])) for i in picked[:limit]])

    def _data_key(self) -> DataKey:
        """This connection's change count and SQLite's ``data_version`` (which moves when
        another connection commits): equal keys, same data."""
        with self.store._lock:
            conn = self.store._conn
            return conn.total_changes, conn.execute("PRAGMA data_version").fetchone()[0]

    def _vectors(self, model_id: str, dim: int) -> tuple[
        npt.NDArray[np.int64], npt.NDArray[np.float32], npt.NDArray[np.intp]
    ]:
        """Every vector of the view, read once and kept until the database changes:
        (chunk rowids, their rows stacked, where each chunk's rows start).

        The key (``_data_key``) moves with any write, here or in another process,
        so the next search sees it: never a stale vector. One entry per view.
        """
        key = self._data_key()
        cached = self._cache.get(model_id)
        if cached is not None and cached[0] == key and cached[2].shape[1:] == (dim,):
            return cached[1], cached[2], cached[3]
        rows = self.store._read(
            "read vectors",
            "SELECT chunk_rowid, vector FROM chunk_vectors WHERE model_id = ? ORDER BY chunk_rowid",
            (model_id,),
        )
        width = dim * 4
        bad = [r for r, blob in rows if not blob or len(blob) % width]
        if bad:
            raise ValueError(
                f"model_id={model_id!r}: stored vectors of {len(bad)} chunks are not rows of "
                f"{dim} dimensions (the query's); a model change needs `reembed`"
            )
        counts = np.asarray([len(blob) // width for _, blob in rows], dtype=np.intp)
        rowids = np.asarray([r for r, _ in rows], dtype=np.int64)
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
        matrix = matrix.reshape(-1, dim)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp) if rows \
            else np.zeros(0, dtype=np.intp)
        self._cache[model_id] = (key, rowids, matrix, starts)
        return rowids, matrix, starts

    def filtered_chunks(self, filters: SearchFilters, limit: int) -> list[Chunk]:
        rows = self.store._read(
            "filtered chunks", FILTERED, {**_params(filters), "limit": check_limit(limit)}
        )
        return [Chunk.model_validate_json(body) for (body,) in rows]

    def get_chunks(self, chunk_ids: Sequence[str], filters: SearchFilters) -> list[Chunk]:
        if not chunk_ids:
            return []
        rows = self.store._read(
            "chunks by id", BY_IDS, {**_params(filters), "ids": json.dumps(list(chunk_ids))}
        )
        return [Chunk.model_validate_json(body) for (body,) in rows]

    def read_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        if not chunk_ids:
            return []
        rows = self.store._read(
            "read chunks",
            "SELECT body FROM chunks WHERE chunk_id IN (SELECT value FROM json_each(:ids))",
            {"ids": json.dumps(list(dict.fromkeys(chunk_ids)))},
        )
        return [Chunk.model_validate_json(body) for (body,) in rows]

    def without_vectors(self, model_id: str, chunk_ids: Sequence[str]) -> set[str]:
        if not chunk_ids:
            return set()
        rows = self.store._read(
            "chunks without vectors",
            "SELECT c.chunk_id FROM chunks AS c WHERE c.chunk_id IN (SELECT value FROM "
            "json_each(:ids)) AND NOT EXISTS (SELECT 1 FROM chunk_vectors AS v "
            "WHERE v.chunk_rowid = c.rowid AND v.model_id = :model_id)",
            {"ids": json.dumps(list(chunk_ids)), "model_id": model_id},
        )
        return {cid for (cid,) in rows}

    # -- VectorStore -------------------------------------------------------
    def chunks_missing_vectors(self, model_id: str, limit: int) -> list[tuple[str, str]]:
        rows = self.store._read(
            "chunks missing vectors", MISSING_VECTORS + " LIMIT :limit",
            {"model_id": model_id, "limit": check_limit(limit)},
        )
        return [(cid, text_to_embed(Chunk.model_validate_json(body))) for cid, body, _ in rows]

    def put_vectors(
        self, model_id: str, vectors: Mapping[str, Sequence[float] | Sequence[Sequence[float]]]
    ) -> int:
        statements = [
            (
                "INSERT OR REPLACE INTO chunk_vectors(chunk_rowid, model_id, vector) "
                "SELECT rowid, ?, ? FROM chunks WHERE chunk_id = ?",
                (model_id, vector_rows(vector).tobytes(), cid),  # windows: rows, one blob
            )
            for cid, vector in vectors.items()
        ]
        if not statements:
            return 0
        return sum(self.store._write("put vectors", statements))

    def vector_backlog(self, model_id: str) -> tuple[int, datetime | None]:
        rows = self.store._read(
            "vector backlog",
            f"SELECT count(*), min(indexed_at) FROM ({MISSING_VECTORS})",  # noqa: S608
            {"model_id": model_id},
        )
        count, oldest = rows[0]
        return int(count), datetime.fromisoformat(oldest) if oldest else None
