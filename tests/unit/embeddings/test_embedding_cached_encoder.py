"""CachedEncoder encodes each distinct passage once per model, and counts what it did."""

from __future__ import annotations

import numpy as np
import pytest
from prometheus_client import CollectorRegistry

from embeddings.cache import CachedEncoder, InMemoryEmbeddingCache, text_hash
from embeddings.encoder import Encoder
from embeddings.errors import EmbeddingCacheError
from embeddings.hashing import HashingEncoder
from embeddings.metrics import EmbeddingMetrics


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


def cached(registry: CollectorRegistry, dim: int = 64) -> CachedEncoder:
    return CachedEncoder(HashingEncoder(dim=dim), InMemoryEmbeddingCache(),
                         EmbeddingMetrics.create(registry))


def sample(registry: CollectorRegistry, name: str) -> float | None:
    return registry.get_sample_value(f"policy_indexer_{name}")


def test_it_gives_the_inner_encoders_vectors(registry: CollectorRegistry) -> None:
    enc: Encoder = cached(registry)  # mypy checks that CachedEncoder is an Encoder
    texts = ["refund", "terms", "refund"]
    np.testing.assert_array_equal(enc.encode(texts), HashingEncoder(dim=64).encode(texts))
    assert (enc.model_id, enc.dim) == ("hashing-v1@64", 64)


def test_only_misses_are_encoded_and_each_distinct_text_once(registry: CollectorRegistry) -> None:
    enc = cached(registry)
    enc.encode(["a", "b", "a"])
    assert (enc.encoder_calls, enc.texts_encoded, enc.cache_hits) == (1, 2, 1)
    enc.encode(["b", "c", "a", "c"])
    assert (enc.encoder_calls, enc.texts_encoded, enc.cache_hits) == (2, 3, 4)
    enc.encode(["a", "b", "c"])  # all cached: the inner encoder is not called
    assert (enc.encoder_calls, enc.texts_encoded, enc.cache_hits) == (2, 3, 7)
    assert sample(registry, "embedding_encoder_calls_total") == 2
    assert sample(registry, "embedding_texts_encoded_total") == 3
    assert sample(registry, "embedding_cache_hits_total") == 7


def test_queries_bypass_the_cache(registry: CollectorRegistry) -> None:
    enc = cached(registry)
    enc.encode(["refund"], kind="query")
    enc.encode(["refund"], kind="query")
    assert (enc.encoder_calls, enc.texts_encoded, enc.cache_hits) == (2, 2, 0)
    assert enc.cache.get_many(enc.model_id, ["refund"]) == {}


def test_a_new_model_shares_no_vector_with_the_old(registry: CollectorRegistry) -> None:
    cache = InMemoryEmbeddingCache()
    old = CachedEncoder(HashingEncoder(dim=64), cache)
    old.encode(["refund"])
    new = CachedEncoder(HashingEncoder(dim=32), cache)
    assert new.encode(["refund"]).shape == (1, 32)
    assert new.texts_encoded == 1


def test_a_cached_vector_of_the_wrong_length_is_re_encoded(registry: CollectorRegistry) -> None:
    enc = cached(registry)
    enc.cache.put_many(enc.model_id, {text_hash(enc.model_id, "a"): np.ones(3, np.float32)})
    assert enc.encode(["a"]).shape == (1, 64)
    assert enc.texts_encoded == 1
    assert enc.cache.get_many(enc.model_id, ["a"])[text_hash(enc.model_id, "a")].shape == (64,)


def test_nothing_asked_nothing_done(registry: CollectorRegistry) -> None:
    enc = cached(registry)
    assert enc.encode([]).shape == (0, 64)
    assert (enc.encoder_calls, enc.texts_encoded, enc.cache_hits) == (0, 0, 0)


class BrokenCache:
    """An ``EmbeddingCache`` whose store is gone: every call fails as the real ones do."""

    def get_many(self, model_id: str, texts: object) -> dict[str, np.ndarray]:
        raise EmbeddingCacheError("embedding cache: read: Elasticsearch unreachable")

    def put_many(self, model_id: str, vectors: object) -> None:
        raise EmbeddingCacheError("embedding cache: write: Elasticsearch unreachable")


def test_a_failing_cache_costs_encodings_never_vectors(registry: CollectorRegistry) -> None:
    enc = CachedEncoder(HashingEncoder(dim=64), BrokenCache(), EmbeddingMetrics.create(registry))
    np.testing.assert_array_equal(enc.encode(["a", "b"]), HashingEncoder(dim=64).encode(["a", "b"]))
    assert (enc.texts_encoded, enc.cache_hits, enc.cache_errors) == (2, 0, 2)  # read and write
    assert sample(registry, "embedding_cache_errors_total") == 2


def test_a_failing_write_still_returns_the_vectors(registry: CollectorRegistry) -> None:
    class ReadOnly(InMemoryEmbeddingCache):
        def put_many(self, model_id: str, vectors: object) -> None:
            raise EmbeddingCacheError("embedding cache: write: database is locked")

    enc = CachedEncoder(HashingEncoder(dim=64), ReadOnly())
    assert enc.encode(["a"]).shape == (1, 64)
    assert (enc.texts_encoded, enc.cache_errors) == (1, 1)
