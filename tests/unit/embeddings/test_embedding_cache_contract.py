"""One contract, every embedding cache: in-memory, SQLite, Elasticsearch (services)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from embeddings.cache import EmbeddingCache, InMemoryEmbeddingCache, text_hash
from embeddings.cache_elasticsearch import ElasticsearchEmbeddingCache
from embeddings.cache_sqlite import SQLiteEmbeddingCache
from embeddings.errors import EmbeddingCacheError

MODEL = "test-model@4"


@contextlib.contextmanager
def memory_cache(_request: pytest.FixtureRequest) -> Iterator[EmbeddingCache]:
    yield InMemoryEmbeddingCache()


@contextlib.contextmanager
def sqlite_cache(request: pytest.FixtureRequest) -> Iterator[EmbeddingCache]:
    tmp_path: Path = request.getfixturevalue("tmp_path")
    cache = SQLiteEmbeddingCache.in_dir(tmp_path / "embedded")
    try:
        yield cache
    finally:
        cache.close()


@contextlib.contextmanager
def elasticsearch_cache(request: pytest.FixtureRequest) -> Iterator[EmbeddingCache]:
    url = request.getfixturevalue("elasticsearch_url")
    cache = ElasticsearchEmbeddingCache.connect(url, f"t{uuid.uuid4().hex[:12]}")
    cache.ensure_ready()
    try:
        yield cache
    finally:
        cache.delete_index()
        cache.close()


CacheFactory = Callable[[pytest.FixtureRequest], contextlib.AbstractContextManager[EmbeddingCache]]


@pytest.fixture(params=[
    pytest.param(memory_cache, id="memory"),
    pytest.param(sqlite_cache, id="sqlite"),
    pytest.param(elasticsearch_cache, id="elasticsearch", marks=pytest.mark.services),
])
def cache(request: pytest.FixtureRequest) -> Iterator[EmbeddingCache]:
    factory: CacheFactory = request.param
    with factory(request) as c:
        yield c


def vec(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def test_the_key_is_sha256_of_model_nul_text() -> None:
    import hashlib

    assert text_hash("m@1", "refund") == hashlib.sha256(b"m@1\x00refund").hexdigest()
    assert text_hash("m@1", "refund") != text_hash("m@2", "refund")
    # NUL keeps model and text apart: "m@1" + "2x" is not "m@12" + "x"
    assert text_hash("m@1", "2x") != text_hash("m@12", "x")


def test_a_stored_vector_comes_back_bit_for_bit(cache: EmbeddingCache) -> None:
    v = vec(0.1, -0.2, 0.3, 1e-7)
    cache.put_many(MODEL, {text_hash(MODEL, "refund within 30 days"): v})
    found = cache.get_many(MODEL, ["refund within 30 days"])
    assert list(found) == [text_hash(MODEL, "refund within 30 days")]
    got = found[text_hash(MODEL, "refund within 30 days")]
    assert got.dtype == np.float32
    assert got.tobytes() == v.tobytes()


def test_misses_are_absent_and_hits_are_found_among_them(cache: EmbeddingCache) -> None:
    cache.put_many(MODEL, {text_hash(MODEL, "a"): vec(1, 0, 0, 0),
                           text_hash(MODEL, "c"): vec(0, 0, 1, 0)})
    found = cache.get_many(MODEL, ["a", "b", "c", "a"])
    assert set(found) == {text_hash(MODEL, "a"), text_hash(MODEL, "c")}
    assert cache.get_many(MODEL, []) == {}


def test_another_model_never_sees_the_vector(cache: EmbeddingCache) -> None:
    cache.put_many(MODEL, {text_hash(MODEL, "a"): vec(1, 0, 0, 0)})
    assert cache.get_many("other-model@4", ["a"]) == {}


def test_writing_a_key_again_replaces_its_vector(cache: EmbeddingCache) -> None:
    key = text_hash(MODEL, "a")
    cache.put_many(MODEL, {key: vec(1, 0, 0, 0)})
    cache.put_many(MODEL, {key: vec(0, 1, 0, 0)})
    assert cache.get_many(MODEL, ["a"])[key].tolist() == [0, 1, 0, 0]


def test_many_vectors_in_one_call_cross_every_batch_boundary(cache: EmbeddingCache) -> None:
    texts = [f"section {i}" for i in range(1203)]  # > mget's 1000 and bulk's 500 per request
    rng = np.random.default_rng(7)
    vectors = {text_hash(MODEL, t): rng.standard_normal(4).astype(np.float32) for t in texts}
    cache.put_many(MODEL, vectors)
    found = cache.get_many(MODEL, texts)
    assert set(found) == set(vectors)
    assert all(found[k].tobytes() == v.tobytes() for k, v in vectors.items())


@pytest.mark.parametrize(("key", "value", "message"), [
    ("not-a-hash", vec(1, 0), "hex sha256"),
    (text_hash(MODEL, "x"), np.zeros((2, 2), dtype=np.float32), "1-D"),
    (text_hash(MODEL, "x"), vec(float("nan"), 0), "finite"),
])
def test_a_bad_vector_is_refused_naming_it(
    cache: EmbeddingCache, key: str, value: np.ndarray, message: str
) -> None:
    with pytest.raises(EmbeddingCacheError, match=message):
        cache.put_many(MODEL, {key: value})
    assert cache.get_many(MODEL, ["x"]) == {}


def test_vectors_of_different_lengths_in_one_call_are_refused(cache: EmbeddingCache) -> None:
    with pytest.raises(EmbeddingCacheError, match="differ in length"):
        cache.put_many(MODEL, {text_hash(MODEL, "a"): vec(1, 0), text_hash(MODEL, "b"): vec(1)})


def test_sqlite_cache_survives_reopening(tmp_path: Path) -> None:
    cache = SQLiteEmbeddingCache.in_dir(tmp_path)
    cache.put_many(MODEL, {text_hash(MODEL, "a"): vec(1, 2, 3, 4)})
    cache.close()
    reopened = SQLiteEmbeddingCache(tmp_path / "embeddings.sqlite3")
    assert reopened.get_many(MODEL, ["a"])[text_hash(MODEL, "a")].tolist() == [1, 2, 3, 4]
    assert reopened.count(MODEL) == 1
    assert reopened._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reopened.close()


def test_sqlite_cache_on_a_file_that_is_not_a_database_says_where(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite3"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(EmbeddingCacheError, match=r"embeddings\.sqlite3"):
        SQLiteEmbeddingCache(path)


def test_a_damaged_sqlite_row_is_a_miss_that_the_next_write_repairs(tmp_path: Path) -> None:
    cache = SQLiteEmbeddingCache.in_dir(tmp_path)
    key = text_hash(MODEL, "a")
    cache.put_many(MODEL, {key: vec(1, 2, 3, 4)})
    cache._conn.execute("UPDATE embeddings SET vector = x'00' WHERE key = ?", (key,))
    assert cache.get_many(MODEL, ["a"]) == {}
    cache.put_many(MODEL, {key: vec(1, 2, 3, 4)})
    assert cache.get_many(MODEL, ["a"])[key].tolist() == [1, 2, 3, 4]
    cache.close()


def test_elasticsearch_prefix_must_be_an_index_name() -> None:
    with pytest.raises(EmbeddingCacheError, match="'Bad'"):
        ElasticsearchEmbeddingCache.connect("http://127.0.0.1:1", "Bad")


@pytest.mark.services
def test_elasticsearch_cache_keeps_the_vector_unindexed_and_base64(elasticsearch_url: str) -> None:
    cache = ElasticsearchEmbeddingCache.connect(elasticsearch_url, f"t{uuid.uuid4().hex[:12]}")
    cache.ensure_ready()
    cache.ensure_ready()  # a second worker starting: no error
    try:
        key = text_hash(MODEL, "a")
        cache.put_many(MODEL, {key: vec(1, 2, 3, 4)})
        mapping = cache.client.indices.get_mapping(index=cache.index)[cache.index]["mappings"]
        assert mapping["properties"]["vector"] == {"type": "binary"}
        source = cache.client.get(index=cache.index, id=key)["_source"]
        assert np.frombuffer(__import__("base64").b64decode(source["vector"]),
                             dtype="<f4").tolist() == [1, 2, 3, 4]
        cache.client.indices.refresh(index=cache.index)
        assert cache.count(MODEL) == 1
    finally:
        cache.delete_index()
        cache.close()


@pytest.mark.services
def test_elasticsearch_cache_without_its_index_is_a_clear_error(elasticsearch_url: str) -> None:
    cache = ElasticsearchEmbeddingCache.connect(elasticsearch_url, f"t{uuid.uuid4().hex[:12]}")
    try:
        with pytest.raises(EmbeddingCacheError, match="-embeddings"):
            cache.get_many(MODEL, ["a"])
    finally:
        cache.close()
