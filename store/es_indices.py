"""Small side indices beside the chunk index: created once, kept at ``index_replicas``.

The reindex run log and lease (``reindex.backends_es``) and the search run log
(``retrieval.runs_es``) are one-shard indices with ``dynamic: false`` mappings.
Each is made here, the one way: created if missing (a concurrent creator's
``resource_already_exists_exception`` is fine), waited for until it can be
searched, and an existing one whose replica count differs from the setting is
changed to it (``number_of_replicas`` is a dynamic setting), so losing a node
of a cluster leaves them searchable.
"""

from __future__ import annotations

from typing import Any

from elasticsearch import Elasticsearch

from store.errors import StoreError
from store.es_requests import translate as es_call


def ensure_index(
    client: Elasticsearch, index: str, properties: dict[str, Any], replicas: int
) -> None:
    """Create ``index`` (1 shard, ``replicas`` replicas) or bring it to ``replicas``."""
    if es_call(f"check index {index!r}", client.indices.exists, index=index):
        keep_replicas(client, index, replicas)
        return
    try:
        es_call(
            f"create index {index!r}",
            client.indices.create,
            index=index,
            settings={"number_of_shards": 1, "number_of_replicas": replicas},
            mappings={"dynamic": False, "properties": properties},
        )
    except StoreError as exc:
        if "resource_already_exists_exception" not in str(exc):
            raise
    # A search on a shard still starting answers 503: wait until it can be searched.
    es_call(f"wait for index {index!r}", client.cluster.health, index=index,
            wait_for_status="yellow", timeout="30s")


def keep_replicas(client: Elasticsearch, index: str, replicas: int) -> None:
    """An index made before ``index_replicas`` changed gets the configured replica count."""
    got = es_call(f"read the settings of {index!r}", client.indices.get_settings, index=index,
                  name="index.number_of_replicas")
    current = [int(v["settings"]["index"]["number_of_replicas"]) for v in got.body.values()]
    if current and all(n == replicas for n in current):
        return
    es_call(f"set {index!r} to {replicas} replicas", client.indices.put_settings, index=index,
            settings={"index": {"number_of_replicas": replicas}})
