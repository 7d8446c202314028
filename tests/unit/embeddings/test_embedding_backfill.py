"""The vector backfill on an in-memory VectorIndex: vectors follow, lag measured, reembed ends."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from support.waiting import wait_until

from embeddings.backfill import VectorBackfill, VectorIndex, reembed
from embeddings.cache import CachedEncoder, InMemoryEmbeddingCache
from embeddings.errors import BackfillStalledError
from embeddings.hashing import HashingEncoder
from embeddings.metrics import EmbeddingMetrics


@dataclass
class FakeIndex:
    """Live chunks (id -> text, indexed_at) and their vectors per model, in dicts."""

    chunks: dict[str, tuple[str, datetime]] = field(default_factory=dict)
    vectors: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    refuse: bool = False  # put_vectors stores nothing (a broken store)
    fail_next: int = 0  # the next calls to chunks_missing_vectors raise
    asked: list[int] = field(default_factory=list)

    def add(self, chunk_id: str, text: str, age_s: float = 0.0) -> None:
        self.chunks[chunk_id] = (text, datetime.now(UTC) - timedelta(seconds=age_s))

    def _missing(self, model_id: str) -> list[str]:
        return sorted((cid for cid in self.chunks if (model_id, cid) not in self.vectors),
                      key=lambda cid: self.chunks[cid][1])

    def chunks_missing_vectors(self, model_id: str, limit: int) -> list[tuple[str, str]]:
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("index unreachable")
        self.asked.append(limit)
        return [(cid, self.chunks[cid][0]) for cid in self._missing(model_id)[:limit]]

    def put_vectors(self, model_id: str, vectors: Mapping[str, Any]) -> int:
        if self.refuse:
            return 0
        stored = 0
        for cid, vector in vectors.items():
            if cid in self.chunks:  # deleted meanwhile: skipped
                self.vectors[(model_id, cid)] = list(vector)
                stored += 1
        return stored

    def vector_backlog(self, model_id: str) -> tuple[int, datetime | None]:
        missing = self._missing(model_id)
        return len(missing), (self.chunks[missing[0]][1] if missing else None)


def make(index: FakeIndex, registry: CollectorRegistry | None = None, dim: int = 32,
         batch_size: int = 4) -> VectorBackfill:
    metrics = EmbeddingMetrics.create(registry) if registry is not None else None
    encoder = CachedEncoder(HashingEncoder(dim=dim), InMemoryEmbeddingCache(), metrics)
    return VectorBackfill(index, encoder, batch_size)


def test_the_fake_is_a_vector_index() -> None:
    index: VectorIndex = FakeIndex()  # mypy checks the protocol here
    assert index.vector_backlog("m") == (0, None)


def test_one_round_stores_a_batch_of_the_oldest_chunks_first() -> None:
    index = FakeIndex()
    for i in range(10):
        index.add(f"doc@v1#s{i}", f"section {i}", age_s=100 - i)
    backfill = make(index, batch_size=4)
    assert backfill.run_once() == 4
    assert {cid for _, cid in index.vectors} == {f"doc@v1#s{i}" for i in range(4)}
    assert backfill.backlog == 6
    assert all(len(v) == 32 for v in index.vectors.values())


def test_gauges_show_backlog_and_the_oldest_waiting_chunks_age() -> None:
    registry = CollectorRegistry()
    index = FakeIndex()
    index.add("a@v1#x", "old text", age_s=600)
    index.add("a@v1#y", "newer text", age_s=10)
    backfill = make(index, registry, batch_size=1)
    backfill.observe_backlog()
    assert registry.get_sample_value("policy_indexer_vector_backlog_chunks") == 2
    lag = registry.get_sample_value("policy_indexer_vector_lag_seconds")
    assert lag is not None and 599 <= lag < 660
    backfill.run_once()  # the oldest got its vector: the lag is the newer one's age
    lag = registry.get_sample_value("policy_indexer_vector_lag_seconds")
    assert lag is not None and 9 <= lag < 70
    backfill.run_once()
    assert registry.get_sample_value("policy_indexer_vector_backlog_chunks") == 0
    assert registry.get_sample_value("policy_indexer_vector_lag_seconds") == 0
    assert registry.get_sample_value("policy_indexer_vectors_written_total") == 2


def test_the_lag_grows_at_scrape_time_while_the_backfill_is_stuck() -> None:
    registry = CollectorRegistry()
    index = FakeIndex()
    index.add("a@v1#x", "text", age_s=5)
    backfill = make(index, registry)
    backfill.observe_backlog()
    first = registry.get_sample_value("policy_indexer_vector_lag_seconds")
    wait_until(lambda: registry.get_sample_value("policy_indexer_vector_lag_seconds"), 5,
               "the lag to grow", every_s=0.01, accept=lambda lag: lag != first)
    later = registry.get_sample_value("policy_indexer_vector_lag_seconds")
    assert first is not None and later is not None and later > first


def test_an_unchanged_section_in_a_new_version_is_not_encoded_again() -> None:
    index = FakeIndex()
    index.add("refund@v1#window", "Refunds within 30 days.")
    index.add("refund@v1#how", "Write to support.")
    backfill = make(index)
    backfill.run_once()
    del index.chunks["refund@v1#window"], index.chunks["refund@v1#how"]
    index.add("refund@v2#window", "Refunds within 60 days.")
    index.add("refund@v2#how", "Write to support.")
    assert backfill.run_once() == 2
    assert backfill.encoder.texts_encoded == 3
    assert backfill.encoder.cache_hits == 1


def test_a_chunk_deleted_while_it_was_encoded_is_skipped() -> None:
    index = FakeIndex()
    index.add("a@v1#x", "x")
    index.add("a@v1#y", "y")
    backfill = make(index)
    original = index.chunks_missing_vectors

    def then_delete(model_id: str, limit: int) -> list[tuple[str, str]]:
        result = original(model_id, limit)
        del index.chunks["a@v1#x"]
        return result

    index.chunks_missing_vectors = then_delete  # type: ignore[method-assign]
    assert backfill.run_once() == 1
    assert backfill.backlog == 0


def test_reembed_after_a_model_change_covers_every_chunk_and_resumes() -> None:
    index = FakeIndex()
    for i in range(23):
        index.add(f"d@v1#s{i}", f"text {i}", age_s=i)
    old = make(index, dim=32)
    while old.run_once():
        pass
    new_encoder = CachedEncoder(HashingEncoder(dim=16), InMemoryEmbeddingCache())
    # an interrupted job: only part of the new model's vectors were stored
    VectorBackfill(index, new_encoder, batch_size=5).run_once()
    assert reembed(index, new_encoder, progress=False, batch_size=5) == 18
    assert index.vector_backlog("hashing-v1@16") == (0, None)
    assert sum(model == "hashing-v1@16" for model, _ in index.vectors) == 23
    assert reembed(index, new_encoder, progress=False) == 0  # nothing left: a no-op


def test_reembed_stops_loudly_when_the_index_refuses_the_vectors() -> None:
    index = FakeIndex(refuse=True)
    index.add("a@v1#x", "x")
    encoder = CachedEncoder(HashingEncoder(dim=16), InMemoryEmbeddingCache())
    with pytest.raises(BackfillStalledError, match="1 chunks lack a vector for 'hashing-v1@16'"):
        reembed(index, encoder, progress=False)


def test_run_forever_follows_new_chunks_survives_failures_and_stops() -> None:
    registry = CollectorRegistry()
    index = FakeIndex(fail_next=2)
    index.add("a@v1#x", "x")
    backfill = make(index, registry, batch_size=2)
    stop = threading.Event()
    thread = threading.Thread(target=backfill.run_forever, args=(stop, 0.01), daemon=True)
    thread.start()
    try:
        wait_until(lambda: set(index.vectors), 5, "the first vector", every_s=0.01,
                   accept=lambda written: ("hashing-v1@32", "a@v1#x") in written)
        index.add("b@v1#y", "y")  # written later: its vector follows
        wait_until(lambda: set(index.vectors), 5, "the later vector", every_s=0.01,
                   accept=lambda written: ("hashing-v1@32", "b@v1#y") in written)
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive(), "run_forever did not stop"
    assert registry.get_sample_value("policy_indexer_vector_backfill_errors_total") == 2


def test_bad_settings_are_refused_naming_them() -> None:
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1, got 0"):
        make(FakeIndex(), batch_size=0)
    with pytest.raises(ValueError, match="idle_s must be > 0, got 0"):
        make(FakeIndex()).run_forever(threading.Event(), 0)


def test_reembed_ends_when_the_index_offers_nothing_though_its_backlog_counts_more() -> None:
    """A backlog may count chunks the index will not offer (old versions awaiting delete)."""
    index = FakeIndex()
    index.add("a@v1#x", "x")
    encoder = CachedEncoder(HashingEncoder(dim=16), InMemoryEmbeddingCache())
    original = index.vector_backlog
    index.vector_backlog = lambda model_id: (original(model_id)[0] + 3, None)  # type: ignore[method-assign]
    assert reembed(index, encoder, progress=False) == 1


def test_a_naive_indexed_at_from_a_store_is_read_as_utc() -> None:
    index = FakeIndex()
    index.add("a@v1#x", "x", age_s=120)
    aware = index.chunks["a@v1#x"][1]
    index.chunks["a@v1#x"] = ("x", aware.replace(tzinfo=None))  # UTC wall time, no zone
    backfill = make(index)
    backfill.observe_backlog()
    assert 119 <= backfill.lag_seconds() < 180
