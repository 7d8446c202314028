"""One digest of what an embedded index holds: the check that a store change meant to be
faster writes the same index.

    .venv/bin/python bench/index_digest.py DATA_DIR

Run it on the data directory of one replay before the change and one after (for
instance ``POLICY_INDEXER_EMBEDDED_DIR=/tmp/a policy-indexer replay LOG --to
embedded``) and compare the lines. Hashed, each in a stable order and by chunk id
(not by SQLite rowid): every chunk row but its ``indexed_at``; its filter row; its
analysed terms; every token instance of both full-text indexes (``chunks_fts``
over the embed text, ``chunk_terms``) as FTS5 itself reads them back; every
document state but its ``indexed_at``. The times of the write are the only thing
left out.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path

QUERIES = {
    "chunks": "SELECT chunk_id, document_id, version, access_labels, embed_text, body "
              "FROM chunks ORDER BY chunk_id",
    "filters": "SELECT c.chunk_id, f.valid_from, f.valid_to, f.scope, f.everyone, f.language "
               "FROM chunk_filters AS f JOIN chunks AS c ON c.rowid = f.rowid "
               "ORDER BY c.chunk_id",
    "terms": "SELECT c.chunk_id, t.terms FROM chunk_terms AS t "
             "JOIN chunks AS c ON c.rowid = t.rowid ORDER BY c.chunk_id",
    "terms_index": "SELECT c.chunk_id, v.term, v.col, v.offset FROM temp.terms_vocab AS v "
                   "JOIN chunks AS c ON c.rowid = v.doc ORDER BY 1, 2, 3, 4",
    "text_index": "SELECT c.chunk_id, v.term, v.col, v.offset FROM temp.text_vocab AS v "
                  "JOIN chunks AS c ON c.rowid = v.doc ORDER BY 1, 2, 3, 4",
    "states": "SELECT document_id, version, changed_at, chunk_ids, superseded_chunk_ids, "
              "content_hash, deleted, owner FROM document_states ORDER BY document_id",
}


def digest(rows: Iterable[tuple[object, ...]]) -> tuple[int, str]:
    h = hashlib.sha256()
    n = 0
    for row in rows:
        h.update(repr(row).encode())
        n += 1
    return n, h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path)
    path = parser.parse_args().data_dir / "index.sqlite3"
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.execute("CREATE VIRTUAL TABLE temp.terms_vocab USING fts5vocab(main, chunk_terms, "
                 "'instance')")
    conn.execute("CREATE VIRTUAL TABLE temp.text_vocab USING fts5vocab(main, chunks_fts, "
                 "'instance')")
    parts = []
    for name, sql in QUERIES.items():
        n, hexdigest = digest(conn.execute(sql))
        parts.append(f"{name} {n} {hexdigest}")
    print("; ".join(parts))


if __name__ == "__main__":
    main()
