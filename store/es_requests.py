"""Requests to Elasticsearch with every error translated into the ``store.errors`` tree.

Bulk requests cut by count and bytes with every item checked; searches paged
with ``search_after`` (the minimal distribution has no ``_delete_by_query``,
and no point in time is needed when the sort key is unique).
"""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

import elastic_transport
from elasticsearch import ApiError, Elasticsearch

from store.errors import StoreAccessError, StoreError, StoreUnavailableError, TransientStoreError
from store.limits import BULK_MAX_ACTIONS, BULK_MAX_BYTES

T = TypeVar("T")
PAGE = 1000


def is_transient_status(status: int) -> bool:
    return status == 429 or status >= 500


def is_blocked(error: object) -> bool:
    """An answer (or a bulk item's ``error``) saying the index is blocked, not the request bad:
    ``cluster_block_exception``, the flood-stage watermark's read-only-allow-delete (429) or an
    operator's write or read-only block (403). The block lifts; the event is not to blame."""
    return "cluster_block_exception" in str(error)


def translate(what: str, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call(*args, **kwargs)`` with every Elasticsearch error in the ``store.errors`` tree.

    The one translation of the project: the store, the reindex's run log, lease and
    index view all call Elasticsearch through it. A ``StoreError`` from an HTTP
    answer carries its ``status`` (a lease's 409, a missing document's 404).
    Credentials refused and certificates not verified are ``StoreAccessError``:
    one line naming the node and the setting to fix, never the secret.
    """
    try:
        return call(*args, **kwargs)
    except elastic_transport.TlsError as exc:
        if not is_tls_config_error(exc):
            raise TransientStoreError(f"{what}: Elasticsearch unreachable: {exc}") from exc
        raise StoreAccessError(tls_message(nodes_of(call), exc)) from exc
    except (elastic_transport.ConnectionError, elastic_transport.ConnectionTimeout) as exc:
        raise TransientStoreError(f"{what}: Elasticsearch unreachable: {exc}") from exc
    except ApiError as exc:
        status = exc.meta.status
        if status == 401 or (status == 403 and is_security_exception(exc)):
            raise StoreAccessError(access_message(what, exc), status=status) from exc
        if is_blocked(exc.body):
            raise StoreUnavailableError(f"{what}: index blocked: HTTP {status}: {exc}",
                                        status=status) from exc
        kind = TransientStoreError if is_transient_status(status) else StoreError
        raise kind(f"{what}: HTTP {status}: {exc}", status=status) from exc
    except elastic_transport.TransportError as exc:
        raise TransientStoreError(f"{what}: {exc}") from exc


# What an ``ssl`` error says when the certificate, not the network, is the problem.
TLS_CONFIG_MARKS = (
    "CERTIFICATE_VERIFY_FAILED",  # unknown CA, self-signed, expired, wrong host name
    "Fingerprints did not match",  # elasticsearch_ca_fingerprint of another CA
    "WRONG_VERSION_NUMBER",  # an https:// URL on a plain-HTTP port
)


def tls_causes(exc: BaseException) -> list[BaseException]:
    """The exceptions under a ``TlsError`` (urllib3's ``SSLError`` wraps the ``ssl`` one)."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 20:
        current = todo.pop()
        if any(current is s for s in seen):
            continue
        seen.append(current)
        nested = [current.__cause__, current.__context__, *current.args,
                  *getattr(current, "errors", ())]
        todo.extend(e for e in nested if isinstance(e, BaseException))
    return seen


def tls_reason(exc: BaseException) -> str:
    """What the TLS layer said, in its own words (``certificate verify failed: ...``)."""
    causes = tls_causes(exc)
    for cause in causes:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"certificate verify failed: {cause.verify_message}"
    for cause in reversed(causes):  # the innermost first: the ssl module's text
        text = str(cause)
        if any(mark in text for mark in TLS_CONFIG_MARKS):
            return text
    return str(causes[-1]) if causes else str(exc)


def is_tls_config_error(exc: elastic_transport.TlsError) -> bool:
    """Verification failed (a setting to fix), as opposed to a handshake cut short (transient)."""
    causes = tls_causes(exc)
    if any(isinstance(c, ssl.SSLCertVerificationError) for c in causes):
        return True
    return any(mark in str(c) for c in causes for mark in TLS_CONFIG_MARKS)


def is_security_exception(exc: ApiError) -> bool:
    """A 403 of the security layer (the user lacks a privilege), not of a cluster block."""
    return "security_exception" in str(exc.body)


def node_url(node: elastic_transport.NodeConfig) -> str:
    """A node's address without anything secret (a NodeConfig holds no credentials)."""
    return f"{node.scheme}://{node.host}:{node.port}{node.path_prefix}"


def nodes_of(call: Callable[..., Any]) -> list[str]:
    """The node URLs behind a client method (``client.search``, ``client.indices.create``)."""
    transport = getattr(getattr(call, "__self__", None), "transport", None)
    pool = getattr(transport, "node_pool", None)
    if pool is None:
        return []
    return [node_url(node.config) for node in pool.all()]


def tls_message(nodes: list[str], exc: elastic_transport.TlsError) -> str:
    where = ", ".join(nodes) or "the configured nodes"
    reason = tls_reason(exc)
    if "WRONG_VERSION_NUMBER" in reason:
        hint = "the node speaks plain HTTP: use an http:// URL in elasticsearch_url(s)"
    elif "Fingerprints did not match" in reason:
        hint = ("elasticsearch_ca_fingerprint is not the SHA-256 of any certificate the node "
                "presents: set the fingerprint of the cluster's CA")
    else:
        hint = ("set elasticsearch_ca_file to the CA that signed the node's certificate "
                "(or elasticsearch_ca_fingerprint to its SHA-256)")
    return f"Elasticsearch at {where}: TLS verification failed ({reason}): {hint}"


def access_message(what: str, exc: ApiError) -> str:
    where = node_url(exc.meta.node)
    status = exc.meta.status
    if status == 401:
        return (f"Elasticsearch at {where} refused the credentials (401): check "
                f"elasticsearch_username/password or elasticsearch_api_key")
    error = exc.body.get("error") if isinstance(exc.body, dict) else None
    reason = error.get("reason") if isinstance(error, dict) else None
    return (f"Elasticsearch at {where} denied {what} (403: {reason or exc.message}): the user "
            "or API key of elasticsearch_username / elasticsearch_api_key lacks the privilege")


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
) -> list[tuple[str, str]]:
    """Send the lines in batches cut by count and bytes; check every item.

    Returns (id, reason) for items refused for their content. A transient
    item failure (429, 5xx) raises ``TransientStoreError``: writing again is
    harmless because ids are deterministic.
    """
    refused: list[tuple[str, str]] = []
    for batch in batches(lines, max_actions, max_bytes):
        payload = b"".join(body for _, body in batch)
        resp = translate(what, client.bulk, operations=payload)
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


