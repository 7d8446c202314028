"""An index file made before owners (schema 2: no ``document_states.owner``) opens and works.

``ensure_ready`` adds the column in place; the states already there are unowned (adopted
by the first owned write), and the indexer goes on writing to the same file.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.chunks import fake_chunker

from events.model import Action, ChangeEvent
from indexing.core import Indexer
from indexing.errors import PoisonEvent
from indexing.model import Outcome
from store.model import DocumentState
from store.sqlite import SQLiteStore
from store.sqlite_schema import SCHEMA_VERSION

T0 = datetime(2026, 1, 1, tzinfo=UTC)

# document_states as schema 2 made it (store/sqlite_schema.py before the owner column)
SCHEMA_2_STATES = """
CREATE TABLE document_states (
    document_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    changed_at TEXT NOT NULL,
    indexed_at TEXT NOT NULL,
    chunk_ids TEXT NOT NULL,
    superseded_chunk_ids TEXT NOT NULL,
    content_hash TEXT,
    deleted INTEGER NOT NULL
);
INSERT INTO document_states VALUES
    ('refunds', 3, '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00',
     '["refunds@v3#alpha"]', '[]', 'h', 0);
UPDATE store_meta SET value = '2' WHERE key = 'schema_version';
"""


def upsert(doc: str, version: int, source: str | None) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc, action=Action.UPSERT, version=version,
        changed_at=T0, content_type="text/markdown", content=f"alpha v{version}", source=source,
    )


@pytest.fixture
def old_file(tmp_path: Path) -> Path:
    path = tmp_path / "index.sqlite3"
    store = SQLiteStore(path)
    store.ensure_ready()
    store.close()
    conn = sqlite3.connect(path)
    conn.executescript("DROP TABLE document_states;" + SCHEMA_2_STATES)
    conn.close()
    return path


def columns(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[1] for row in conn.execute("PRAGMA table_info(document_states)")}
    finally:
        conn.close()


def test_an_old_file_gains_the_owner_column_and_keeps_its_states(old_file: Path) -> None:
    assert "owner" not in columns(old_file)
    store = SQLiteStore(old_file)
    store.ensure_ready()
    state = store.get_state("refunds")
    assert state is not None and state.version == 3 and state.owner is None
    assert [s.document_id for s in store.iter_states()] == ["refunds"]
    version = store._read("v", "SELECT value FROM store_meta WHERE key = 'schema_version'")
    assert version == [(str(SCHEMA_VERSION),)]
    store.close()
    assert "owner" in columns(old_file)
    again = SQLiteStore(old_file)  # a second open finds the column there: nothing to do
    again.ensure_ready()
    again.close()


def test_the_indexer_writes_owners_into_an_upgraded_file(old_file: Path) -> None:
    store = SQLiteStore(old_file)
    store.ensure_ready()
    indexer = Indexer(store, chunk=fake_chunker)
    assert indexer.apply_one(upsert("refunds", 4, "folder")) is Outcome.INDEXED  # adopted
    assert indexer.apply_one(upsert("promo", 1, "cms")) is Outcome.INDEXED
    with pytest.raises(PoisonEvent, match="belongs to source 'folder'"):
        indexer.apply_one(upsert("refunds", 5, "cms"))
    states = {s.document_id: (s.version, s.owner) for s in store.iter_states()}
    assert states == {"refunds": (4, "folder"), "promo": (1, "cms")}
    store.put_state(DocumentState("legacy", 1, T0, T0))
    legacy = store.get_state("legacy")
    assert legacy is not None and legacy.owner is None
    store.close()
