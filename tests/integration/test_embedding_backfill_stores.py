"""The vector backfill on the real stores' VectorIndex: SQLite, Elasticsearch (services), memory.

Chunks are written as the worker writes them (no vectors); the backfill brings
their vectors, the backlog reaches 0, a new version re-encodes only the
section that changed, and a model change is a re-embedding of everything.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from support.chunks import make_chunk
from support.stores import ready_sqlite_store

from chunker.model import Chunk
from embeddings.backfill import VectorBackfill, VectorIndex, reembed
from embeddings.cache import CachedEncoder
from embeddings.cache_sqlite import SQLiteEmbeddingCache
from embeddings.hashing import HashingEncoder
from embeddings.metrics import EmbeddingMetrics
from store.elasticsearch import ElasticsearchStore
from store.es_search import ElasticsearchSearchIndex
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex
from store.model import DocumentState
from store.sqlite_search import SQLiteSearchIndex

DIMS = 16
T0 = datetime(2027, 1, 1, tzinfo=UTC)


@dataclass
class Backend:
    store: Any
    vectors: VectorIndex

    def publish(self, chunks: Sequence[Chunk]) -> None:
        """Write a document version and its state, delete its older chunks (the worker's steps)."""
        self.store.write_chunks(chunks)
        doc, version = chunks[0].document_id, chunks[0].version
        self.store.put_state(DocumentState(doc, version, T0, T0,
                                           tuple(c.chunk_id for c in chunks)))
        self.store.refresh()
        older = self.store.find_chunks(doc, below_version=version)
        self.store.delete_chunks([ref.chunk_id for ref in older])
        self.store.refresh()


@contextlib.contextmanager
def _memory(_request: pytest.FixtureRequest) -> Iterator[Backend]:
    store = InMemoryStore()
    yield Backend(store, InMemorySearchIndex(store))


@contextlib.contextmanager
def _sqlite(request: pytest.FixtureRequest) -> Iterator[Backend]:
    with ready_sqlite_store(request.getfixturevalue("tmp_path")) as store:
        yield Backend(store, SQLiteSearchIndex(store))


@contextlib.contextmanager
def _elasticsearch(request: pytest.FixtureRequest) -> Iterator[Backend]:
    url = request.getfixturevalue("elasticsearch_url")
    connected = ElasticsearchStore.connect(url, f"t{uuid.uuid4().hex[:12]}")
    store = ElasticsearchStore(connected.client, connected.names.prefix, vector_dims=DIMS)
    store.ensure_ready()
    try:
        yield Backend(store, ElasticsearchSearchIndex(store))
    finally:
        store.delete_everything()
        store.close()


@pytest.fixture(params=[
    pytest.param(_memory, id="memory"),
    pytest.param(_sqlite, id="sqlite"),
    pytest.param(_elasticsearch, id="elasticsearch", marks=pytest.mark.services),
])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    with request.param(request) as made:
        yield made


def refund(version: int, window: str) -> list[Chunk]:
    return [
        make_chunk("refund", version, "window", ordinal=0, text=f"Refunds within {window}."),
        make_chunk("refund", version, "how", ordinal=1, text="Write to support with the order."),
        make_chunk("refund", version, "damage", ordinal=2, text="Damage in transit is ours."),
    ]


def encoder(tmp_path: Path, registry: CollectorRegistry | None = None,
            ngram_range: tuple[int, int] = (3, 5)) -> CachedEncoder:
    metrics = EmbeddingMetrics.create(registry) if registry is not None else None
    inner = HashingEncoder(dim=DIMS, ngram_range=ngram_range)
    return CachedEncoder(inner, SQLiteEmbeddingCache.in_dir(tmp_path), metrics)


def drain(backend: Backend, backfill: VectorBackfill, rounds: int = 50) -> None:
    """Rounds until the index reports no backlog (Elasticsearch shows writes after a refresh)."""
    for _ in range(rounds):
        backfill.run_once()
        backend.store.refresh()
        if backfill.observe_backlog() == 0:
            return
    raise AssertionError(f"backlog still {backfill.backlog} after {rounds} rounds")


def test_vectors_follow_the_chunks_and_the_backlog_reaches_zero(
    backend: Backend, tmp_path: Path
) -> None:
    registry = CollectorRegistry()
    backend.publish(refund(1, "30 days"))
    backfill = VectorBackfill(backend.vectors, encoder(tmp_path, registry=registry), 2)
    assert backfill.observe_backlog() == 3
    assert registry.get_sample_value("policy_indexer_vector_backlog_chunks") == 3
    lag = registry.get_sample_value("policy_indexer_vector_lag_seconds")
    assert lag is not None and lag >= 0
    drain(backend, backfill)
    assert backend.vectors.vector_backlog(backfill.model_id) == (0, None)
    assert registry.get_sample_value("policy_indexer_vector_lag_seconds") == 0
    assert backfill.encoder.texts_encoded == 3


def test_a_new_version_encodes_only_the_section_that_changed(
    backend: Backend, tmp_path: Path
) -> None:
    backend.publish(refund(1, "30 days"))
    backfill = VectorBackfill(backend.vectors, encoder(tmp_path), 32)
    drain(backend, backfill)
    backend.publish(refund(2, "60 days"))
    assert backfill.observe_backlog() == 3  # every chunk of v2 lacks its vector ...
    drain(backend, backfill)
    assert backfill.encoder.texts_encoded == 4  # ... but only the changed one is encoded
    assert backend.vectors.vector_backlog(backfill.model_id) == (0, None)


def test_a_model_change_is_a_reembedding_of_every_live_chunk(
    backend: Backend, tmp_path: Path
) -> None:
    backend.publish(refund(1, "30 days"))
    drain(backend, VectorBackfill(backend.vectors, encoder(tmp_path), 32))
    new_model = encoder(tmp_path, ngram_range=(2, 4))  # same length, another model id
    assert backend.vectors.vector_backlog(new_model.model_id)[0] == 3
    written = reembed(backend.vectors, new_model, progress=False)
    backend.store.refresh()
    assert written >= 3
    assert backend.vectors.vector_backlog(new_model.model_id) == (0, None)
    assert new_model.texts_encoded == 3
