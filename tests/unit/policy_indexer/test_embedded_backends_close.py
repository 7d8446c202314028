"""Closing the embedded backends stops the search index's postings reader before its store."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import cast

import pytest

from policy_indexer.runtime.backends import EmbeddedBackends
from policy_indexer.settings import Settings
from store.sqlite import SQLiteStore
from store.sqlite_search import SQLiteSearchIndex


def test_close_closes_each_search_index_then_its_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[str] = []
    index_close, store_close = SQLiteSearchIndex.close, SQLiteStore.close

    def close_index(index: SQLiteSearchIndex) -> None:
        closed.append("index")
        index_close(index)

    def close_store(store: SQLiteStore) -> None:
        closed.append(f"store {store.path.name}")
        store_close(store)

    monkeypatch.setattr(SQLiteSearchIndex, "close", close_index)
    monkeypatch.setattr(SQLiteStore, "close", close_store)
    settings = Settings(embedded_dir=tmp_path / "data", kafka_topic=f"t-{uuid.uuid4().hex[:8]}")
    backends = EmbeddedBackends.open(settings)
    index = cast(SQLiteSearchIndex, backends.search_index())
    backends.close()
    assert closed[:2] == ["index", f"store {index.store.path.name}"]
    assert index._closed  # no reader starts after it
