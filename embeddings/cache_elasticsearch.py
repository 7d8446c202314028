"""The embedding cache of the Kafka mode: one Elasticsearch index shared by every worker.

Index ``<prefix>-embeddings``; document id = the cache key (``text_hash``), so
a worker that encodes a text another worker already encoded overwrites it with
the same vector (harmless). The vector is stored as base64 little-endian
float32 in a ``binary`` field, which Elasticsearch keeps in ``_source`` only:
not indexed, no doc values, no HNSW graph. The chunks' searchable vectors live
in the chunk index (the store's business); this index is only a lookup by id.
Reads are ``mget`` (real-time: a vector written a moment ago is found without
a refresh); writes are bulk ``index`` actions with every item checked.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import structlog
from elasticsearch import Elasticsearch

from embeddings.cache import Vector, check_vectors, text_hash
from embeddings.errors import EmbeddingCacheError, TransientEmbeddingCacheError
from foundation.es_errors import ErrorTree, is_transient_status
from foundation.es_errors import call as es_call

T = TypeVar("T")
log = structlog.get_logger(__name__)
_LE_FLOAT32 = np.dtype("<f4")
_IDS_PER_MGET = 1000
_ACTIONS_PER_BULK = 500

MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "model_id": {"type": "keyword"},
        "dim": {"type": "integer", "index": False},
        "vector": {"type": "binary"},
        "created_at": {"type": "date", "format": "epoch_second"},
    },
}


# A blocked index lifts (transient); refused credentials or TLS not verified is a setting.
CACHE_ERRORS = ErrorTree(
    error=lambda message, _status: EmbeddingCacheError(message),
    transient=lambda message, _status: TransientEmbeddingCacheError(message),
    blocked=lambda message, _status: TransientEmbeddingCacheError(message),
    access=lambda message, _status: EmbeddingCacheError(message),
)


def _call(what: str, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return es_call(CACHE_ERRORS, f"embedding cache: {what}", call, *args, **kwargs)


class ElasticsearchEmbeddingCache:
    """Implements ``embeddings.cache.EmbeddingCache`` in the index ``<prefix>-embeddings``."""

    def __init__(self, client: Elasticsearch, prefix: str, *, replicas: int = 0) -> None:
        if not prefix or prefix != prefix.lower() or prefix.startswith(("-", "_")):
            raise EmbeddingCacheError(
                f"prefix must be a lower-case index name prefix, got {prefix!r}")
        self.client = client
        self.index = f"{prefix}-embeddings"
        self.replicas = replicas  # index_replicas, as every index of the project

    @classmethod
    def connect(
        cls, url: str, prefix: str, *, api_key: str | None = None, timeout_s: float = 10.0
    ) -> ElasticsearchEmbeddingCache:
        client = Elasticsearch(url, api_key=api_key, request_timeout=timeout_s, max_retries=0,
                               retry_on_timeout=False)
        return cls(client, prefix)

    def ensure_ready(self) -> None:
        """Create the index if it is missing (several workers may race: that is fine)."""
        if _call(f"check index {self.index!r}", self.client.indices.exists, index=self.index):
            return
        try:
            _call(f"create index {self.index!r}", self.client.indices.create, index=self.index,
                  mappings=MAPPINGS,
                  settings={"number_of_shards": 1, "number_of_replicas": self.replicas})
        except EmbeddingCacheError as exc:
            if "resource_already_exists_exception" not in str(exc):
                raise

    def get_many(self, model_id: str, texts: Sequence[str]) -> dict[str, Vector]:
        keys = list(dict.fromkeys(text_hash(model_id, t) for t in texts))
        found: dict[str, Vector] = {}
        for start in range(0, len(keys), _IDS_PER_MGET):
            part = keys[start : start + _IDS_PER_MGET]
            resp = _call(f"mget {len(part)} keys of {model_id!r}", self.client.mget,
                         index=self.index, ids=part, realtime=True)
            for doc in resp["docs"]:
                if "error" in doc:
                    raise EmbeddingCacheError(
                        f"embedding cache: mget {doc.get('_id')!r}: {doc['error']}")
                if not doc.get("found"):
                    continue
                vector = _decode(doc["_id"], doc["_source"], model_id)
                if vector is not None:
                    found[doc["_id"]] = vector
        return found

    def put_many(self, model_id: str, vectors: Mapping[str, Vector]) -> None:
        checked = check_vectors(model_id, vectors)
        items = list(checked.items())
        now = int(time.time())
        for start in range(0, len(items), _ACTIONS_PER_BULK):
            operations: list[dict[str, Any]] = []
            for key, vector in items[start : start + _ACTIONS_PER_BULK]:
                operations.append({"index": {"_index": self.index, "_id": key}})
                operations.append({
                    "model_id": model_id,
                    "dim": int(vector.size),
                    "vector": base64.b64encode(vector.astype(_LE_FLOAT32).tobytes()).decode(),
                    "created_at": now,
                })
            what = f"write {len(operations) // 2} vectors of {model_id!r}"
            resp = _call(what, self.client.bulk, operations=operations)
            if not resp.get("errors"):
                continue
            for item in resp["items"]:
                result = item["index"]
                status = int(result.get("status", 0))
                if status < 300:
                    continue
                error = (TransientEmbeddingCacheError if is_transient_status(status)
                         else EmbeddingCacheError)
                raise error(f"embedding cache: {what}: item {result.get('_id')!r}: HTTP "
                            f"{status}: {result.get('error')}")

    def count(self, model_id: str) -> int:
        """Vectors held for ``model_id`` (reports and tests; needs a refresh to be exact)."""
        resp = _call(f"count {model_id!r}", self.client.count, index=self.index,
                     query={"term": {"model_id": model_id}})
        return int(resp["count"])

    def delete_index(self) -> None:
        """Remove the index (tests, or dropping a retired model's cache wholesale)."""
        _call(f"delete index {self.index!r}",
              self.client.options(ignore_status=404).indices.delete, index=self.index)

    def close(self) -> None:
        self.client.close()


def _decode(key: str, source: Mapping[str, Any], model_id: str) -> Vector | None:
    """The document's vector; one damaged or of another model is a miss (logged)."""
    try:
        raw = base64.b64decode(source["vector"], validate=True)
        dim = int(source["dim"])
    except (KeyError, TypeError, ValueError, binascii.Error):
        raw, dim = b"", -1
    if source.get("model_id") != model_id or len(raw) != 4 * dim:
        log.warning("damaged embedding cache document, treated as a miss", key=key,
                    index_model_id=source.get("model_id"), model_id=model_id)
        return None
    return np.frombuffer(raw, dtype=_LE_FLOAT32).astype(np.float32)
