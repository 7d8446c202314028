"""The statements that write chunks and their search rows in the embedded store.

Many chunks a statement (``store.sqlite_schema`` says why), in slices of at most
``per_statement`` rows; run in one transaction, in the order returned: the chunks, then
their filters, then their terms (each statement finds the chunk's rowid by its id).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from chunker.model import Chunk
from store.search_index import is_for_everyone
from store.search_terms import chunk_terms
from store.sqlite_schema import DROP_TERMS, PUT_FILTERS, PUT_TERMS, UPSERT_CHUNKS, values

Statement = tuple[str, Sequence[Any]]


def _slices(rows: Sequence[Sequence[Any]], per_statement: int) -> Iterator[Sequence[Sequence[Any]]]:
    for start in range(0, len(rows), per_statement):
        yield rows[start:start + per_statement]


def _many(sql: str, rows: Sequence[Sequence[Any]], per_statement: int) -> list[Statement]:
    """``sql`` with its ``{values}`` (or ``{params}``, one column) for each slice of rows."""
    statements: list[Statement] = []
    for part in _slices(rows, per_statement):
        width = len(part[0])
        placeholders = values(len(part), width)
        text = sql.format(values=placeholders, params=", ".join("?" * len(part)))
        statements.append((text, [arg for row in part for arg in row]))
    return statements


def chunk_rows(
    chunks: Sequence[Chunk], indexed_at: str, per_statement: int
) -> list[Statement]:
    """The upserts of ``chunks`` (distinct ids) into ``chunks``."""
    rows = [
        (c.chunk_id, c.document_id, c.version, indexed_at,
         json.dumps(sorted(set(c.metadata.access_labels))), c.embed_text, c.model_dump_json())
        for c in chunks
    ]
    return _many(UPSERT_CHUNKS, rows, per_statement)


def search_rows(chunks: Sequence[Chunk], per_statement: int) -> list[Statement]:
    """The statements that keep the chunks' search rows (distinct ids); run after their
    upserts, same transaction."""
    return [*filter_rows(chunks, per_statement), *term_rows(chunks, per_statement)]


def filter_rows(chunks: Sequence[Chunk], per_statement: int) -> list[Statement]:
    """The first part of ``search_rows``: the chunks' filters, and their old terms dropped."""
    if not chunks:
        return []
    filters = []
    for chunk in chunks:
        meta = chunk.metadata
        filters.append((
            meta.valid_from.isoformat() if meta.valid_from else None,
            meta.valid_to.isoformat() if meta.valid_to else None,
            json.dumps(meta.scope), int(is_for_everyone(meta.scope)), meta.language,
            chunk.chunk_id,
        ))
    ids = [(chunk.chunk_id,) for chunk in chunks]
    return [
        *_many(PUT_FILTERS, filters, per_statement),
        *_many(DROP_TERMS, ids, per_statement),
    ]


def term_rows(chunks: Sequence[Chunk], per_statement: int) -> list[Statement]:
    """The rest of ``search_rows``: the chunks' analysed terms (the Python work of a write,
    so ``SQLiteStore.write_chunks`` computes them while SQLite runs the statements before)."""
    if not chunks:
        return []
    terms = [(chunk_terms(chunk), chunk.chunk_id) for chunk in chunks]
    return _many(PUT_TERMS, terms, per_statement)
