"""The search run log of the Kafka mode: ``<prefix>-search-runs`` in Elasticsearch.

One document per run (id = run id), made with ``op_type=create``; read with a
real-time ``get`` (a run recorded a moment ago is found without a refresh).
Only ``run_id``, ``key_id`` and ``at`` are indexed (retention and the caller
check need them); the request and the passages ride in ``_source``. One shard,
``index_replicas`` replicas, made by ``store.es_indices.ensure_index`` like the
reindex run log. Every call goes through ``store.es_requests.translate``; a
``StoreError`` becomes ``RunLogError`` here.

Retention without ``_delete_by_query`` (absent from the minimal distribution):
the ids of old runs are read and deleted in bulk, then, while more than
``keep`` runs remain, the oldest in pages.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from elasticsearch import Elasticsearch

from retrieval.runs import RunLogError, SearchRun
from store.errors import StoreError
from store.es_indices import ensure_index
from store.es_requests import bulk, search_all, translate

PROPERTIES: dict[str, Any] = {
    "run_id": {"type": "keyword"},
    "key_id": {"type": "keyword"},
    "at": {"type": "date"},
}
PRUNE_PAGE = 1000


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


class ElasticsearchRunLog:
    """Implements ``retrieval.runs.RunLog`` in the index ``<prefix>-search-runs``."""

    def __init__(self, client: Elasticsearch, prefix: str, *, replicas: int = 0) -> None:
        self.client = client
        self.index = f"{prefix}-search-runs"
        self.replicas = replicas

    def ensure_ready(self) -> None:
        try:
            ensure_index(self.client, self.index, PROPERTIES, self.replicas)
        except StoreError as exc:
            raise RunLogError(f"cannot create the search run log {self.index!r}: {exc}") \
                from exc

    def record(self, run: SearchRun) -> None:
        document = {**run.to_json(), "at": _iso(run.at)}
        try:
            translate(f"record search run {run.run_id!r}", self.client.index, index=self.index,
                      id=run.run_id, document=document, op_type="create")
        except StoreError as exc:
            raise RunLogError(str(exc)) from exc

    def get(self, run_id: str, key_id: str) -> SearchRun | None:
        try:
            resp = translate(f"read search run {run_id!r}", self.client.get,
                             index=self.index, id=run_id)
        except StoreError as exc:
            if exc.status == 404:  # no such run, or no index yet
                return None
            raise RunLogError(str(exc)) from exc
        source = resp["_source"]
        if source.get("key_id") != key_id:
            return None  # another caller's run reads as no run at all
        return SearchRun.from_json(source)

    def prune(self, *, before: datetime, keep: int) -> int:
        try:
            translate("refresh the search run log", self.client.indices.refresh,
                      index=self.index)
            old = [h["_id"] for h in search_all(
                self.client, self.index, {"range": {"at": {"lt": _iso(before)}}}, "run_id",
                ["run_id"])]
            dropped = self._delete(old)
            while (excess := self.count() - max(keep, 0)) > 0:
                resp = translate("oldest search runs", self.client.search, index=self.index,
                                 sort=[{"at": "asc"}, {"run_id": "asc"}],
                                 size=min(excess, PRUNE_PAGE), source=False,
                                 track_total_hits=False)
                ids = [h["_id"] for h in resp["hits"]["hits"]]
                if not ids:
                    break
                dropped += self._delete(ids)
        except StoreError as exc:
            raise RunLogError(f"prune the search run log: {exc}") from exc
        return dropped

    def _delete(self, ids: list[str]) -> int:
        if not ids:
            return 0
        lines = [(i, json.dumps({"delete": {"_index": self.index, "_id": i}}).encode() + b"\n")
                 for i in ids]
        deleted = [0]
        refused = bulk(self.client, lines, "delete search runs", deleted=deleted)
        if refused:
            raise RunLogError(f"delete search runs: {refused[:3]}")
        translate("refresh the search run log", self.client.indices.refresh, index=self.index)
        return deleted[0]

    def count(self) -> int:
        try:  # refreshed first: runs recorded a moment ago count
            translate("refresh the search run log", self.client.indices.refresh,
                      index=self.index)
            resp = translate("count search runs", self.client.count, index=self.index)
        except StoreError as exc:
            if exc.status == 404:
                return 0
            raise RunLogError(str(exc)) from exc
        return int(resp["count"])

    def close(self) -> None:
        return None  # the client is the store's
