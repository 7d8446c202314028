"""The content-addressed embedding cache and the encoder that uses it.

A vector is a function of the model and the text only, so it is stored under
``sha256(model_id + NUL + text)``: a section that did not change in a new
version of its document has the same key, and is never encoded again. The
model id is in the key, so two models never share a vector (a model change
re-encodes everything, by construction).

Only passages are cached. A query goes straight to the encoder: queries are
short, one at a time, and unbounded user text; and for an asymmetric model
(e5's ``query:``/``passage:``) a query's vector differs from a passage's of the
same text, which this key does not tell apart.

Implementations: ``embeddings.cache_sqlite`` (embedded mode, one file) and
``embeddings.cache_elasticsearch`` (Kafka mode, shared by every worker).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt
import structlog

from embeddings.encoder import Encoder, TextKind, Vectors
from embeddings.errors import EmbeddingCacheError
from embeddings.metrics import EmbeddingMetrics

log = structlog.get_logger(__name__)

Vector = npt.NDArray[np.float32]


def text_hash(model_id: str, text: str) -> str:
    """The cache key: hex sha256 of ``model_id``, a NUL byte, and ``text`` (UTF-8)."""
    return hashlib.sha256(f"{model_id}\x00{text}".encode()).hexdigest()


class EmbeddingCache(Protocol):
    def get_many(self, model_id: str, texts: Sequence[str]) -> dict[str, Vector]:
        """Vectors found for these texts, by ``text_hash(model_id, text)``; misses are absent."""

    def put_many(self, model_id: str, vectors: Mapping[str, Vector]) -> None:
        """Store vectors by their ``text_hash``; writing a key again replaces it."""


def check_vectors(model_id: str, vectors: Mapping[str, Vector]) -> dict[str, Vector]:
    """Vectors as 1-D float32 arrays of one length, finite; a clear error otherwise."""
    checked: dict[str, Vector] = {}
    dims: set[int] = set()
    for key, value in vectors.items():
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise EmbeddingCacheError(f"cache key must be a hex sha256, got {key!r}")
        array = np.asarray(value, dtype=np.float32)
        if array.ndim != 1 or array.size == 0 or not np.all(np.isfinite(array)):
            raise EmbeddingCacheError(
                f"vector for {key!r} (model {model_id!r}) must be a non-empty finite 1-D "
                f"array, got shape {array.shape}"
            )
        dims.add(array.size)
        checked[key] = array
    if len(dims) > 1:
        raise EmbeddingCacheError(f"vectors for model {model_id!r} differ in length: {dims}")
    return checked


class CachedEncoder:
    """An ``Encoder`` that encodes only the passages its cache does not hold.

    Counters (plain ints, and the Prometheus ones when ``metrics`` is given):
    ``encoder_calls`` (calls to the inner encoder), ``texts_encoded`` (texts it
    encoded), ``cache_hits`` (passages answered without encoding). For passages,
    ``texts_encoded + cache_hits`` is the number of texts asked for.

    A cache that fails (``EmbeddingCacheError``: unreachable, busy) is logged and
    counted (``cache_errors``), never fatal: a failed read makes every text a
    miss, a failed write loses only the saving. The vectors are right either way.
    """

    def __init__(
        self, encoder: Encoder, cache: EmbeddingCache, metrics: EmbeddingMetrics | None = None
    ) -> None:
        self.encoder = encoder
        self.cache = cache
        self.metrics = metrics
        self.encoder_calls = 0
        self.texts_encoded = 0
        self.cache_hits = 0
        self.cache_errors = 0

    @property
    def model_id(self) -> str:
        return self.encoder.model_id

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def encode(self, texts: Sequence[str], *, kind: TextKind = "passage") -> Vectors:
        if kind != "passage":
            return self._inner(texts, kind)
        model_id = self.model_id
        keys = [text_hash(model_id, t) for t in texts]
        try:
            found = self.cache.get_many(model_id, list(dict.fromkeys(texts)))
        except EmbeddingCacheError:
            # the cache only saves work: without it every text is a miss, and the
            # vectors are still right
            log.exception("embedding cache read failed; encoding every text",
                          model_id=model_id, texts=len(texts))
            self._cache_failed()
            found = {}
        for key, vector in list(found.items()):
            if vector.shape != (self.dim,):
                log.warning("embedding cache vector of the wrong length, re-encoding",
                            model_id=model_id, key=key, length=vector.size, dim=self.dim)
                del found[key]
        missing: dict[str, str] = {}  # key -> text, each distinct miss once
        for key, text in zip(keys, texts, strict=True):
            if key not in found:
                missing.setdefault(key, text)
        if missing:
            encoded = self._inner(list(missing.values()), kind)
            fresh = dict(zip(missing, encoded, strict=True))
            try:
                self.cache.put_many(model_id, fresh)
            except EmbeddingCacheError:
                log.exception("embedding cache write failed; the vectors are returned anyway",
                              model_id=model_id, texts=len(fresh))
                self._cache_failed()
            found.update(fresh)
        hits = len(texts) - len(missing)
        self.cache_hits += hits
        if self.metrics is not None:
            self.metrics.cache_hits.inc(hits)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

    def _cache_failed(self) -> None:
        self.cache_errors += 1
        if self.metrics is not None:
            self.metrics.cache_errors.inc()

    def _inner(self, texts: Sequence[str], kind: TextKind) -> Vectors:
        vectors = self.encoder.encode(texts, kind=kind)
        self.encoder_calls += 1
        self.texts_encoded += len(texts)
        if self.metrics is not None:
            self.metrics.encoder_calls.inc()
            self.metrics.texts_encoded.inc(len(texts))
        return vectors


class InMemoryEmbeddingCache:
    """``EmbeddingCache`` in a dict: unit tests, benchmarks, one-shot commands."""

    def __init__(self) -> None:
        self._vectors: dict[str, Vector] = {}

    def get_many(self, model_id: str, texts: Sequence[str]) -> dict[str, Vector]:
        found: dict[str, Vector] = {}
        for text in texts:
            key = text_hash(model_id, text)
            vector = self._vectors.get(key)
            if vector is not None:
                found[key] = vector.copy()
        return found

    def put_many(self, model_id: str, vectors: Mapping[str, Vector]) -> None:
        for key, vector in check_vectors(model_id, vectors).items():
            self._vectors[key] = vector.copy()

    def __len__(self) -> int:
        return len(self._vectors)
