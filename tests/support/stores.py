"""Store factories for the contract suite: each yields a fresh, empty, ready store.

The embedded SQLite store joins by adding a factory to ``STORE_FACTORIES``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from chunker.model import Chunk
from store.base import Store
from store.elasticsearch import ElasticsearchStore
from store.memory import InMemoryStore
from store.model import DocumentState
from store.sqlite import SQLiteStore


@contextlib.contextmanager
def memory_store(_request: pytest.FixtureRequest) -> Iterator[Store]:
    yield InMemoryStore()


@contextlib.contextmanager
def elasticsearch_store(request: pytest.FixtureRequest) -> Iterator[Store]:
    url = request.getfixturevalue("elasticsearch_url")
    store = ElasticsearchStore.connect(url, f"t{uuid.uuid4().hex[:12]}")
    store.bulk_max_actions = 7  # several bulk requests even in small tests
    store.ensure_ready()
    try:
        yield store
    finally:
        store.delete_everything()
        store.close()


@contextlib.contextmanager
def ready_sqlite_store(folder: Path) -> Iterator[SQLiteStore]:
    """A ready SQLite store in ``folder/index.sqlite3`` (the ``sqlite_store`` fixture's),
    closed on the way out."""
    store = SQLiteStore(folder / "index.sqlite3")
    store.ensure_ready()
    try:
        yield store
    finally:
        store.close()


@contextlib.contextmanager
def sqlite_store(request: pytest.FixtureRequest) -> Iterator[Store]:
    with ready_sqlite_store(request.getfixturevalue("tmp_path")) as store:
        yield store


StoreFactory = Callable[[pytest.FixtureRequest], contextlib.AbstractContextManager[Store]]

STORE_FACTORIES: list[object] = [
    pytest.param(memory_store, id="memory"),
    pytest.param(elasticsearch_store, id="elasticsearch", marks=pytest.mark.services),
    pytest.param(sqlite_store, id="sqlite"),
]


WRITTEN_AT = datetime(2027, 1, 1, tzinfo=UTC)


def add_current(store: Store, chunks: Sequence[Chunk], at: datetime = WRITTEN_AT) -> None:
    """Write ``chunks``, each the current version of a document of its own (the document's
    state lists that one chunk): what a search sees as a library."""
    store.write_chunks(chunks)
    for c in chunks:
        store.put_state(DocumentState(c.document_id, c.version, at, at, (c.chunk_id,)))
