"""The embedded store's tables: chunks, their FTS5 index, and document states.

``chunks_fts`` is an external-content FTS5 table over ``chunks.embed_text``,
kept in step by triggers, so the text is stored once and a chunk write and its
full-text entry are one transaction. Access labels are a JSON array per chunk;
the search filters on them inside the SQL (``store.search``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

# 2: the search side (chunk_filters, chunk_terms, chunk_vectors); a version-1 file gets
# its search rows on ensure_ready.
# 3: document_states.owner (one owner per document); an older file gains the column
# (NULL: unowned) on ensure_ready, in place (``ADD_OWNER``).
SCHEMA_VERSION = 3

SCHEMA = """
CREATE TABLE IF NOT EXISTS store_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    document_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    indexed_at TEXT NOT NULL,
    access_labels TEXT NOT NULL,
    embed_text TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_document ON chunks(document_id, version);

CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    embed_text,
    content='chunks',
    content_rowid='rowid',
    tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, embed_text) VALUES (new.rowid, new.embed_text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, embed_text)
        VALUES ('delete', old.rowid, old.embed_text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_fts_update AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, embed_text)
        VALUES ('delete', old.rowid, old.embed_text);
    INSERT INTO chunks_fts(rowid, embed_text) VALUES (new.rowid, new.embed_text);
END;

CREATE TABLE IF NOT EXISTS document_states (
    document_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    changed_at TEXT NOT NULL,
    indexed_at TEXT NOT NULL,
    chunk_ids TEXT NOT NULL,
    superseded_chunk_ids TEXT NOT NULL,
    content_hash TEXT,
    deleted INTEGER NOT NULL,
    owner TEXT
);
"""

# A file made before schema 3: its states gain the owner column, NULL (unowned).
ADD_OWNER = "ALTER TABLE document_states ADD COLUMN owner TEXT"

# Statements that write chunks and their search rows take many rows at once: at each
# statement's savepoint FTS5 writes the terms it holds in memory to its index as a new
# segment, which later writes then merge. One statement a chunk made a segment a chunk
# in both FTS5 tables (and one a deleted chunk): most of an embedded replay's time.
UPSERT_CHUNKS = """
INSERT INTO chunks(chunk_id, document_id, version, indexed_at, access_labels, embed_text, body)
VALUES {values}
ON CONFLICT(chunk_id) DO UPDATE SET
    document_id = excluded.document_id,
    version = excluded.version,
    indexed_at = excluded.indexed_at,
    access_labels = excluded.access_labels,
    embed_text = excluded.embed_text,
    body = excluded.body
"""
DELETE_CHUNKS = "DELETE FROM chunks WHERE chunk_id IN ({params})"


def values(rows: int, columns: int) -> str:
    """``(?, ?), (?, ?)`` for ``rows`` rows of ``columns`` parameters: a multi-row statement."""
    one = "(" + ", ".join("?" * columns) + ")"
    return ", ".join([one] * rows)


# The version check and the write are one statement: a lower version changes nothing.
PUT_STATE = """
INSERT INTO document_states(document_id, version, changed_at, indexed_at, chunk_ids,
                            superseded_chunk_ids, content_hash, deleted, owner)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(document_id) DO UPDATE SET
    version = excluded.version,
    changed_at = excluded.changed_at,
    indexed_at = excluded.indexed_at,
    chunk_ids = excluded.chunk_ids,
    superseded_chunk_ids = excluded.superseded_chunk_ids,
    content_hash = excluded.content_hash,
    deleted = excluded.deleted,
    owner = excluded.owner
WHERE excluded.version >= document_states.version
"""

GET_STATE = """
SELECT document_id, version, changed_at, indexed_at, chunk_ids, superseded_chunk_ids,
       content_hash, deleted, owner
FROM document_states WHERE document_id = ?
"""

LIST_STATES = """
SELECT document_id, version, changed_at, indexed_at, chunk_ids, superseded_chunk_ids,
       content_hash, deleted, owner
FROM document_states WHERE document_id > ? ORDER BY document_id LIMIT ?
"""

# Only chunks of a document's current, live version are found, so a search never
# sees a version between its chunk write and its state write, nor an old one
# the delete step has yet to remove. A chunk is visible to a caller when every
# label it carries is among the caller's labels (no labels: visible to all).
SEARCH = """
SELECT c.body, -bm25(chunks_fts) AS score
FROM chunks_fts
JOIN chunks AS c ON c.rowid = chunks_fts.rowid
JOIN document_states AS s
  ON s.document_id = c.document_id AND s.version = c.version AND s.deleted = 0
WHERE chunks_fts MATCH :match
  AND NOT EXISTS (
      SELECT 1 FROM json_each(c.access_labels) AS needed
      WHERE NOT EXISTS (SELECT 1 FROM json_each(:caller_labels) AS mine
                        WHERE mine.type = 'text' AND mine.value = hex(needed.value))
  )
ORDER BY bm25(chunks_fts), c.chunk_id
LIMIT :limit
"""

# -- the search side: filters, analysed terms and vectors per chunk ----------
# Written in the chunk's own transaction (``store.sqlite_rows.search_rows``); removed
# with it (foreign keys, and a trigger for the FTS5 table, which has none).
SEARCH_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunk_filters (
    rowid INTEGER PRIMARY KEY REFERENCES chunks(rowid) ON DELETE CASCADE,
    valid_from TEXT,
    valid_to TEXT,
    scope TEXT NOT NULL,
    everyone INTEGER NOT NULL,
    language TEXT
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_terms USING fts5(
    terms,
    tokenize='unicode61 remove_diacritics 0'
);
CREATE TRIGGER IF NOT EXISTS chunk_terms_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunk_terms WHERE rowid = old.rowid;
END;
CREATE TABLE IF NOT EXISTS chunk_vectors (
    chunk_rowid INTEGER NOT NULL REFERENCES chunks(rowid) ON DELETE CASCADE,
    model_id TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (chunk_rowid, model_id)
);
"""

PUT_FILTERS = """
INSERT OR REPLACE INTO chunk_filters(rowid, valid_from, valid_to, scope, everyone, language)
SELECT c.rowid, v.column1, v.column2, v.column3, v.column4, v.column5
FROM (VALUES {values}) AS v JOIN chunks AS c ON c.chunk_id = v.column6
"""
DROP_TERMS = """
DELETE FROM chunk_terms WHERE rowid IN (SELECT rowid FROM chunks WHERE chunk_id IN ({params}))
"""
PUT_TERMS = """
INSERT INTO chunk_terms(rowid, terms)
SELECT c.rowid, v.column1 FROM (VALUES {values}) AS v JOIN chunks AS c ON c.chunk_id = v.column2
"""

# Every filter of ``store.search_index`` in SQL: current version (the join on the
# state), date, scope, permission. ``:any_scope`` / ``:no_permission`` switch one off.
LIVE_JOIN = """
JOIN document_states AS s
  ON s.document_id = c.document_id AND s.version = c.version AND s.deleted = 0
JOIN chunk_filters AS f ON f.rowid = c.rowid
"""
FILTERS = """
(f.valid_from IS NULL OR f.valid_from <= :as_of)
AND (f.valid_to IS NULL OR f.valid_to >= :as_of)
AND (:any_scope OR f.everyone OR EXISTS (
    SELECT 1 FROM json_each(f.scope) AS mine
    WHERE mine.value IN (SELECT value FROM json_each(:scope))))
AND (:no_permission OR NOT EXISTS (
    SELECT 1 FROM json_each(c.access_labels) AS needed
    WHERE NOT EXISTS (SELECT 1 FROM json_each(:caller_labels) AS mine
                      WHERE mine.type = 'text' AND mine.value = hex(needed.value))))
"""

KEYWORD_SEARCH = f"""
SELECT c.body, -bm25(chunk_terms) AS score
FROM chunk_terms
JOIN chunks AS c ON c.rowid = chunk_terms.rowid
{LIVE_JOIN}
WHERE chunk_terms MATCH :match AND {FILTERS}
ORDER BY bm25(chunk_terms), c.chunk_id
LIMIT :limit
"""  # noqa: S608 - constant SQL, every value is a parameter

ADMITTED_ROWIDS = f"""
SELECT c.rowid FROM chunks AS c {LIVE_JOIN}
WHERE c.rowid IN (SELECT value FROM json_each(:rowids)) AND {FILTERS}
"""  # noqa: S608

FILTERED = f"""
SELECT c.body FROM chunks AS c {LIVE_JOIN}
WHERE {FILTERS}
ORDER BY c.chunk_id LIMIT :limit
"""  # noqa: S608

BY_IDS = f"""
SELECT c.body FROM chunks AS c {LIVE_JOIN}
WHERE c.chunk_id IN (SELECT value FROM json_each(:ids)) AND {FILTERS}
"""  # noqa: S608

MISSING_VECTORS = """
SELECT c.chunk_id, c.body, c.indexed_at FROM chunks AS c
JOIN document_states AS s
  ON s.document_id = c.document_id AND s.version = c.version AND s.deleted = 0
WHERE NOT EXISTS (
    SELECT 1 FROM chunk_vectors AS v WHERE v.chunk_rowid = c.rowid AND v.model_id = :model_id)
ORDER BY c.indexed_at, c.chunk_id
"""


def caller_labels_param(labels: Iterable[str]) -> str:
    """The caller's labels as the permission filter's ``:caller_labels``: a JSON list of
    the upper-case hex of each label's UTF-8 bytes.

    The filter compares it with ``hex()`` of each label a chunk carries, so it fails
    closed on anything but an exact byte match: SQLite's ``json_each`` cuts a string at
    ``\u0000`` (``"public\u0000agents"`` would read as ``public``), and a NULL, a number
    or any other non-hex value equals no ``hex()`` at all.
    """
    return json.dumps(sorted(label.encode("utf-8").hex().upper() for label in labels))
