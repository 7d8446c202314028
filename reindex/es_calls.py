"""One Elasticsearch call with its errors translated into the ``store.errors`` tree.

The reindex's own requests (the chunk-count aggregation, the run log, the lease)
fail the same way as the store's: ``TransientStoreError`` for unreachable, 429
and 5xx, ``StoreError`` otherwise. (The store keeps the same translation for
its own requests; this copy keeps the reindex off the store's private helpers.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import elastic_transport
from elasticsearch import ApiError

from store.errors import StoreError, TransientStoreError

T = TypeVar("T")


def es_call(what: str, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return call(*args, **kwargs)
    except ApiError as exc:
        status = exc.meta.status
        kind = TransientStoreError if status == 429 or status >= 500 else StoreError
        raise kind(f"{what}: HTTP {status}: {exc}") from exc
    except elastic_transport.TransportError as exc:  # unreachable, timeout
        raise TransientStoreError(f"{what}: Elasticsearch unreachable: {exc}") from exc
