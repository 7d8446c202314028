"""Requests to Elasticsearch with every error translated into the ``store.errors`` tree.

Bulk requests cut by count and bytes with every item checked; searches paged
with ``search_after`` (the minimal distribution has no ``_delete_by_query``,
and no point in time is needed when the sort key is unique).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from elasticsearch import Elasticsearch

from foundation.es_errors import ErrorTree, is_blocked, is_transient_status
from foundation.es_errors import call as es_call
from store.errors import StoreAccessError, StoreError, StoreUnavailableError, TransientStoreError
from store.limits import BULK_MAX_ACTIONS, BULK_MAX_BYTES

T = TypeVar("T")
PAGE = 1000


STORE_ERRORS = ErrorTree(
    error=lambda message, status: StoreError(message, status=status),
    transient=lambda message, status: TransientStoreError(message, status=status),
    blocked=lambda message, status: StoreUnavailableError(message, status=status),
    access=lambda message, status: StoreAccessError(message, status=status),
)


def translate(what: str, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` with every Elasticsearch error in the ``store.errors`` tree.

    The store, the search run log, the reindex's run log, lease and index view call
    Elasticsearch through it; the rule itself is ``foundation.es_errors.call``, which
    the embedding cache uses with its own tree. Credentials refused and certificates
    not verified are ``StoreAccessError``; an index blocked is ``StoreUnavailableError``.
    """
    return es_call(STORE_ERRORS, what, call, *args, **kwargs)


def parse_dt(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def bulk(
    client: Elasticsearch,
    lines: Sequence[tuple[str, bytes]],
    what: str,
    *,
    deleted: list[int] | None = None,
    conflicts: set[str] | None = None,
    max_actions: int = BULK_MAX_ACTIONS,
    max_bytes: int = BULK_MAX_BYTES,
    refresh: str | None = None,
) -> list[tuple[str, str]]:
    """Send the lines in batches cut by count and bytes; check every item.

    ``refresh="wait_for"``: each batch returns once a search sees it.

    Returns (id, reason) for items refused for their content. A transient
    item failure (429, 5xx) raises ``TransientStoreError``: writing again is
    harmless because ids are deterministic.
    """
    refused: list[tuple[str, str]] = []
    for batch in batches(lines, max_actions, max_bytes):
        payload = b"".join(body for _, body in batch)
        options = {} if refresh is None else {"refresh": refresh}
        resp = translate(what, client.bulk, operations=payload, **options)
        if not resp.get("errors") and deleted is None:  # every item succeeded
            continue
        for item in resp["items"]:
            (op, result), = item.items()
            status = int(result.get("status", 0))
            if op == "delete" and status == 404:
                continue  # not_found is what an idempotent delete wants
            if conflicts is not None and status == 409:
                conflicts.add(str(result.get("_id")))
                continue
            if is_blocked(result.get("error")):
                raise StoreUnavailableError(
                    f"{what}: index blocked: item {result.get('_id')!r}: {status}: "
                    f"{str((result.get('error') or {}).get('reason'))[:300]}", status=status)
            if is_transient_status(status):
                raise TransientStoreError(f"{what}: item {result.get('_id')!r}: {status}")
            if status >= 300:
                refused.append((str(result.get("_id")), json.dumps(result.get("error"))))
            elif op == "delete" and deleted is not None:
                deleted[0] += 1
    return refused


def search_all(
    client: Elasticsearch,
    index: str,
    query: dict[str, Any],
    sort_field: str,
    fields: list[str] | None,
    *,
    page: int = PAGE,
) -> Iterator[dict[str, Any]]:
    """Page through every hit with search_after on a unique keyword (no PIT needed)."""
    after: list[Any] | None = None
    while True:
        kwargs: dict[str, Any] = {
            "index": index,
            "query": query,
            "sort": [{sort_field: "asc"}],
            "size": page,
            "track_total_hits": False,
        }
        if fields is not None:
            kwargs["source_includes"] = fields
        if after is not None:
            kwargs["search_after"] = after
        resp = translate(f"search {index!r}", client.search, **kwargs)
        hits = resp["hits"]["hits"]
        yield from hits
        if len(hits) < page:
            return
        after = hits[-1]["sort"]


def batches(
    lines: Sequence[tuple[str, bytes]], max_actions: int, max_bytes: int
) -> Iterator[list[tuple[str, bytes]]]:
    batch: list[tuple[str, bytes]] = []
    size = 0
    for line in lines:
        if batch and (len(batch) >= max_actions or size + len(line[1]) > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(line)
        size += len(line[1])
    if batch:
        yield batch


