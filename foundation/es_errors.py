"""Every Elasticsearch call's errors in the caller's own error tree, by one rule.

A package that calls Elasticsearch names its tree once (an ``ErrorTree``: which
of its errors means transient, blocked, refused access, anything else) and
makes each call through ``call(tree, what, method, ...)``. The rule is the same
for every client: unreachable, timeouts, 429 and 5xx are transient; an index
blocked (flood stage, an operator's block) is blocked; credentials refused
(401, a 403 of the security layer) and a certificate not verified are access
errors, one line naming the node and the setting to fix, never the secret; any
other HTTP answer is the tree's plain error, with its ``status``. Every error is
raised ``from`` the client's, so the cause stays in the traceback.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import elastic_transport
from elasticsearch import ApiError

T = TypeVar("T")

# An error of the caller's tree made from (message, HTTP status or None).
MakeError = Callable[[str, "int | None"], Exception]


@dataclass(frozen=True)
class ErrorTree:
    """Which error of a package's tree each kind of failure becomes."""

    error: MakeError  # an answer that asking again will not change (400, 404, 409...)
    transient: MakeError  # unreachable, timeout, 429, 5xx: ask again later
    blocked: MakeError  # the index is blocked: it lifts, the request is not to blame
    access: MakeError  # credentials refused or TLS not verified: a setting to fix


def is_transient_status(status: int) -> bool:
    return status == 429 or status >= 500


def is_blocked(error: object) -> bool:
    """An answer (or a bulk item's ``error``) saying the index is blocked, not the request bad:
    ``cluster_block_exception``, the flood-stage watermark's read-only-allow-delete (429) or an
    operator's write or read-only block (403). The block lifts; the event is not to blame."""
    return "cluster_block_exception" in str(error)


def call(tree: ErrorTree, what: str, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``method(*args, **kwargs)`` with every Elasticsearch error in ``tree``.

    ``what`` says what was asked, for the message (``read chunks``). An error from an
    HTTP answer carries its ``status`` (a lease's 409, a missing document's 404).
    """
    try:
        return method(*args, **kwargs)
    except elastic_transport.TlsError as exc:
        if not is_tls_config_error(exc):
            raise tree.transient(f"{what}: Elasticsearch unreachable: {exc}", None) from exc
        raise tree.access(tls_message(nodes_of(method), exc), None) from exc
    except (elastic_transport.ConnectionError, elastic_transport.ConnectionTimeout) as exc:
        raise tree.transient(f"{what}: Elasticsearch unreachable: {exc}", None) from exc
    except ApiError as exc:
        status = exc.meta.status
        if status == 401 or (status == 403 and is_security_exception(exc)):
            raise tree.access(access_message(what, exc), status) from exc
        if is_blocked(exc.body):
            raise tree.blocked(f"{what}: index blocked: HTTP {status}: {exc}", status) from exc
        kind = tree.transient if is_transient_status(status) else tree.error
        raise kind(f"{what}: HTTP {status}: {exc}", status) from exc
    except elastic_transport.TransportError as exc:
        raise tree.transient(f"{what}: {exc}", None) from exc


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
