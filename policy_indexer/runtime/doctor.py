"""``policy-indexer doctor``: what a deployment needs, checked before it runs.

Each check is one line with what it found or what is wrong and what to set:
the settings load (already true when this runs), the secrets the configured
connections need are present, Kafka answers with the credentials and the topics
exist with the settings they need, Elasticsearch answers with its credentials
and CA and has the index templates and aliases, the source lists. The
embedded mode checks its directory instead of Kafka and Elasticsearch.

A check never changes anything: ``topics create`` and ``run`` create what is
missing.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import SecretStr

from policy_indexer.settings import Settings, mask_url
from store.errors import StoreError
from store.es_requests import translate

if TYPE_CHECKING:
    from store.elasticsearch import ElasticsearchStore

Outcome = Literal["ok", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    name: str
    outcome: Outcome
    detail: str

    def line(self) -> str:
        mark = {"ok": "ok  ", "fail": "FAIL", "skip": "skip"}[self.outcome]
        return f"{mark}  {self.name}: {self.detail}"


def run_checks(settings: Settings) -> list[Check]:
    """Every check that applies to the configured mode, in the order a deployment needs them."""
    from policy_indexer.runtime.backends import backends_class  # noqa: PLC0415

    checks: list[Callable[[Settings], Iterator[Check]]] = [
        secrets, *backends_class(settings).doctor_checks(), source]
    return [check for fn in checks for check in _guarded(fn, settings)]


def _guarded(fn: Callable[[Settings], Iterator[Check]], settings: Settings) -> Iterator[Check]:
    """A check that raises is a failed check, named, never a traceback."""
    name = fn.__name__
    try:
        yield from fn(settings)
    except Exception as exc:  # a doctor reports every failure, whatever its type
        yield Check(name, "fail", f"{type(exc).__name__}: {exc}".splitlines()[0])


def secrets(settings: Settings) -> Iterator[Check]:
    """Which secrets are set (never their values).

    A secret the connections need but lack, or a ``*_FILE`` that cannot be read,
    already stops the settings from loading (exit 2, naming it) before any check
    runs, and the source check names a missing source path or URL; this line
    says what the process will present.
    """
    present = [name for name in Settings.model_fields if _is_set_secret(getattr(settings, name))]
    yield Check("secrets", "ok", "set: " + (", ".join(present) or "none"))


def _is_set_secret(value: object) -> bool:
    """A secret setting with a value: one secret, or a list of them (rotation)."""
    if isinstance(value, SecretStr):
        return bool(value.get_secret_value())
    return isinstance(value, list) and bool(value) and all(isinstance(v, SecretStr)
                                                            for v in value)


def kafka(settings: Settings) -> Iterator[Check]:
    """Kafka answers with the configured credentials; the topics exist with their settings."""
    from policy_indexer.runtime.topics import check_configured_topics  # noqa: PLC0415

    where = f"{settings.kafka_bootstrap_servers} ({settings.kafka_security_protocol})"
    problems = check_configured_topics(settings)
    if problems:
        for problem in problems:
            yield Check("kafka", "fail", problem)
        return
    yield Check("kafka", "ok", f"{where}: topics {settings.kafka_topic!r} and "
                f"{settings.kafka_dead_letter_topic!r} as configured")


def elasticsearch(settings: Settings) -> Iterator[Check]:
    """Elasticsearch answers with its credentials and CA; templates and aliases exist."""
    from policy_indexer.runtime.backends import open_elasticsearch  # noqa: PLC0415

    nodes = ",".join(mask_url(u) for u in settings.elasticsearch_nodes())
    store = open_elasticsearch(settings)
    try:
        yield from _elasticsearch_checks(settings, store, nodes)
    except StoreError as exc:
        yield Check("elasticsearch", "fail", f"{nodes}: {exc}".splitlines()[0])
    finally:
        store.close()


def _elasticsearch_checks(
    settings: Settings, store: ElasticsearchStore, nodes: str
) -> Iterator[Check]:
    indices = store.client.indices
    # The cluster's health, not GET /: a user with only the project's index
    # privileges may be refused the root endpoint.
    health = translate("cluster health", store.client.cluster.health)
    status, count = health["status"], health["number_of_nodes"]
    outcome: Outcome = "fail" if status == "red" else "ok"
    yield Check("elasticsearch", outcome, f"{nodes}: cluster {health['cluster_name']!r} "
                f"{status}, {count} node(s)")
    if settings.index_replicas >= count:
        yield Check("elasticsearch", "fail", f"index_replicas {settings.index_replicas} "
                    f"needs more than {count} node(s): new indices would stay yellow")
    if count > 1:
        yield from _replica_checks(settings, store, count)
    names = store.names
    for alias in (names.chunks, names.states):
        has_template = bool(translate(f"check template {alias!r}",
                                      indices.exists_index_template, name=alias))
        has_alias = bool(translate(f"check alias {alias!r}", indices.exists_alias,
                                   name=alias))
        if has_template and has_alias:
            yield Check("index", "ok", f"template and alias {alias!r}")
        else:
            missing = [what for what, there in (("template", has_template),
                                                ("alias", has_alias)) if not there]
            yield Check("index", "fail", f"{' and '.join(missing)} {alias!r} missing: "
                        "`policy-indexer run` (or `reindex`) creates them")


def project_indices(settings: Settings) -> list[str]:
    """Index patterns of every index the project makes under its prefix (no other prefix's)."""
    prefix = settings.index_prefix
    return [f"{prefix}-chunks-*", f"{prefix}-document-states-*", f"{prefix}-reindex-runs",
            f"{prefix}-reindex-lease", f"{prefix}-embeddings"]


def _replica_checks(settings: Settings, store: ElasticsearchStore, count: int) -> Iterator[Check]:
    """On a cluster of several nodes, an index with no replica is lost with one node."""
    if settings.index_replicas == 0:
        yield Check("replicas", "fail", f"index_replicas 0 on a {count}-node cluster: new "
                    "indices, the run log and the lease have no copy on another node; set "
                    "POLICY_INDEXER_INDEX_REPLICAS=1")
    got = translate("read the indices' replica counts", store.client.indices.get_settings,
                    index=project_indices(settings), name="index.number_of_replicas",
                    ignore_unavailable=True, allow_no_indices=True)
    yield from replica_report(dict(got.body), count)


def replica_report(index_settings: dict[str, object], count: int) -> Iterator[Check]:
    """One FAIL per index with 0 replicas, from ``GET <indices>/_settings`` of a cluster of
    ``count`` nodes; one ok line when every index has a copy on another node."""
    if count < 2:
        return
    zero: list[str] = []
    for index, body in sorted(index_settings.items()):
        replicas = _dig(body, "settings", "index", "number_of_replicas")
        if replicas is not None and str(replicas) == "0":
            zero.append(index)
    for index in zero:
        yield Check("replicas", "fail", f"index {index!r} has 0 replicas on a {count}-node "
                    "cluster: losing the node that holds it makes it red; "
                    f"PUT {index}/_settings {{\"index\": {{\"number_of_replicas\": 1}}}}")
    if not zero:
        yield Check("replicas", "ok", f"{len(index_settings)} index(es), each with a replica "
                    f"on another of the {count} nodes")


def _dig(value: object, *keys: str) -> object:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def embedded(settings: Settings) -> Iterator[Check]:
    """The embedded directory is writable and its SQLite files open."""
    directory = settings.embedded_dir
    if not directory.exists():
        parent = directory.resolve().parent
        if os.access(parent, os.W_OK):
            yield Check("embedded", "ok", f"{directory} does not exist yet; `run` creates it")
        else:
            yield Check("embedded", "fail", f"{directory} cannot be created: {parent} is not "
                        "writable")
        return
    if not os.access(directory, os.W_OK):
        yield Check("embedded", "fail", f"{directory} is not writable by this user")
        return
    for name in ("index.sqlite3", "queue.sqlite3"):
        path = directory / name
        if not path.exists():
            yield Check("embedded", "ok", f"{path} not created yet")
            continue
        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                result = db.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            result = str(exc)
        if result == "ok":
            yield Check("embedded", "ok", f"{path} opens, quick_check ok")
        else:
            yield Check("embedded", "fail", f"{path} is damaged: {result}")


def source(settings: Settings) -> Iterator[Check]:
    """The configured source lists; unreadable documents are named (they are not indexed)."""
    from policy_indexer.runtime.sources import open_configured_source  # noqa: PLC0415

    if settings.source_kind is None:
        yield Check("source", "skip", "no source configured (POLICY_INDEXER_SOURCE_KIND): the "
                    "monitor and the nightly reconcile need one")
        return
    listed = open_configured_source(settings)
    try:
        entries = list(listed.list_documents())
    finally:
        listed.close()
    bad = [e for e in entries if e.unreadable is not None]
    yield Check("source", "ok", f"{listed.name}: {len(entries) - len(bad)} documents listed")
    for entry in bad[:20]:
        yield Check("source", "fail", f"{entry.document_id} unreadable: {entry.unreadable}")
    if len(bad) > 20:
        yield Check("source", "fail", f"... and {len(bad) - 20} more unreadable documents")
