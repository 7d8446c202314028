"""Every metric of the embeddings package, declared once.

Build them into a registry you pass in (``EmbeddingMetrics.create(registry)``);
nothing is registered at import. One object per process, handed to the
``CachedEncoder`` and the ``VectorBackfill``. Names, types and meanings:

- ``policy_indexer_embedding_encoder_calls_total`` counter: calls to the inner
  (real) encoder, one per batch of cache misses.
- ``policy_indexer_embedding_texts_encoded_total`` counter: texts the inner encoder
  encoded (cache misses, each distinct text of a call once).
- ``policy_indexer_embedding_cache_hits_total`` counter: passage texts answered
  without encoding (found in the cache, or a repeat within the same call).
- ``policy_indexer_embedding_cache_errors_total`` counter: cache reads or writes that
  failed; the encoder went on without the cache (every text a miss, or the saving lost).
- ``policy_indexer_vectors_written_total`` counter: chunk vectors the backfill stored.
- ``policy_indexer_vector_backlog_chunks`` gauge: live chunks without a vector for the
  backfill's model, as of its last look at the index.
- ``policy_indexer_vector_lag_seconds`` gauge: age of the oldest live chunk without a
  vector (now - its ``indexed_at``), 0 when none. Computed at scrape time from the
  last look, so a backfill stuck in the middle of a backlog shows a growing lag.
  The alert ``PolicyIndexerVectorLagAboveBound`` watches it.
- ``policy_indexer_vector_backfill_errors_total`` counter: backfill rounds that failed
  (index or cache unreachable, ...); the loop logs, waits and tries again.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

from foundation.metric_names import NAMESPACE


@dataclass(frozen=True)
class EmbeddingMetrics:
    encoder_calls: Counter
    texts_encoded: Counter
    cache_hits: Counter
    cache_errors: Counter
    vectors_written: Counter
    vector_backlog: Gauge
    vector_lag: Gauge
    backfill_errors: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> EmbeddingMetrics:
        ns = NAMESPACE
        return cls(
            encoder_calls=Counter(
                "embedding_encoder_calls", "Calls to the inner encoder (batches of misses).",
                namespace=ns, registry=registry),
            texts_encoded=Counter(
                "embedding_texts_encoded", "Texts the inner encoder encoded.",
                namespace=ns, registry=registry),
            cache_hits=Counter(
                "embedding_cache_hits", "Passage texts answered without encoding.",
                namespace=ns, registry=registry),
            cache_errors=Counter(
                "embedding_cache_errors", "Embedding cache reads or writes that failed.",
                namespace=ns, registry=registry),
            vectors_written=Counter(
                "vectors_written", "Chunk vectors stored by the backfill.",
                namespace=ns, registry=registry),
            vector_backlog=Gauge(
                "vector_backlog_chunks", "Live chunks without a vector for the current model.",
                namespace=ns, registry=registry),
            vector_lag=Gauge(
                "vector_lag_seconds",
                "Age of the oldest live chunk without a vector; 0 when none.",
                namespace=ns, registry=registry),
            backfill_errors=Counter(
                "vector_backfill_errors", "Backfill rounds that failed.",
                namespace=ns, registry=registry),
        )
