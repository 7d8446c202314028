"""The run log and the lease in Elasticsearch, next to the index they describe.

``<prefix>-reindex-runs``: one document per run (id = run id).
``<prefix>-reindex-lease``: one document per job (id = job name), changed with
``op_type=create`` (first taker) or ``if_seq_no`` + ``if_primary_term`` (the
minimal distribution has no scripts; optimistic concurrency needs none).

Both have one shard and ``replicas`` replicas: ``index_replicas``, the setting
every index of the project takes, so losing a node of a cluster leaves them
searchable. An existing index whose replica count differs is changed to it
(``number_of_replicas`` is a dynamic setting).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from elasticsearch import Elasticsearch

from reindex.errors import LeaseError
from reindex.lease import LeaseRecord
from reindex.runs import RunRecord
from store.errors import StoreError
from store.es_indices import ensure_index
from store.es_requests import translate as es_call

RUN_PROPERTIES: dict[str, Any] = {
    "run_id": {"type": "keyword"},
    "job": {"type": "keyword"},
    "trigger": {"type": "keyword"},
    "holder": {"type": "keyword"},
    "started_at": {"type": "date"},
    "ended_at": {"type": "date"},
    "outcome": {"type": "keyword"},
    "counts": {"type": "object", "enabled": False},
    "error": {"type": "text", "index": False},
    "dry_run": {"type": "boolean"},
}
LEASE_PROPERTIES: dict[str, Any] = {
    "job": {"type": "keyword"},
    "holder": {"type": "keyword"},
    "token": {"type": "keyword"},
    "expires_at": {"type": "date"},
    "scheduled_started_at": {"type": "date"},
}


def _dt(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


class ElasticsearchRunLog:
    def __init__(self, client: Elasticsearch, prefix: str, *, replicas: int = 0) -> None:
        self.client = client
        self.index = f"{prefix}-reindex-runs"
        self.replicas = replicas

    def ensure_ready(self) -> None:
        ensure_index(self.client, self.index, RUN_PROPERTIES, self.replicas)

    def save(self, record: RunRecord) -> None:
        body = {
            "run_id": record.run_id, "job": record.job, "trigger": record.trigger,
            "holder": record.holder, "started_at": record.started_at.isoformat(),
            "ended_at": record.ended_at.isoformat() if record.ended_at else None,
            "outcome": record.outcome, "counts": record.counts, "error": record.error,
            "dry_run": record.dry_run,
        }
        es_call(f"save run {record.run_id!r}", self.client.index, index=self.index,
                   id=record.run_id, document=body, refresh=True)

    def _search(self, query: dict[str, Any], sort: str, limit: int) -> list[RunRecord]:
        resp = es_call("search runs", self.client.search, index=self.index, query=query,
                          sort=[{sort: "desc"}], size=limit, track_total_hits=False)
        return [_run_from(hit["_source"]) for hit in resp["hits"]["hits"]]

    def last_success(self, job: str) -> RunRecord | None:
        query = {"bool": {"filter": [{"term": {"job": job}}, {"term": {"outcome": "success"}},
                                     {"term": {"dry_run": False}}]}}
        found = self._search(query, "ended_at", 1)
        return found[0] if found else None

    def recent(self, job: str, limit: int = 10) -> list[RunRecord]:
        return self._search({"term": {"job": job}}, "started_at", limit)


def _run_from(src: dict[str, Any]) -> RunRecord:
    started = _dt(src.get("started_at"))
    if started is None:
        raise StoreError(f"run record {src.get('run_id')!r} has no started_at")
    return RunRecord(
        run_id=str(src["run_id"]), job=str(src["job"]), trigger=str(src.get("trigger")),
        holder=str(src.get("holder")), started_at=started, ended_at=_dt(src.get("ended_at")),
        outcome=str(src.get("outcome")), counts=dict(src.get("counts") or {}),
        error=src.get("error"), dry_run=bool(src.get("dry_run")),
    )


class ElasticsearchLeaseBackend:
    def __init__(self, client: Elasticsearch, prefix: str, *, replicas: int = 0) -> None:
        self.client = client
        self.index = f"{prefix}-reindex-lease"
        self.replicas = replicas

    def ensure_ready(self) -> None:
        try:
            ensure_index(self.client, self.index, LEASE_PROPERTIES, self.replicas)
        except StoreError as exc:
            raise LeaseError(f"cannot create the lease index {self.index!r}: {exc}") from exc

    def read(self, job: str) -> tuple[LeaseRecord | None, object]:
        try:
            resp = es_call(f"read the lease of {job!r}", self.client.get, index=self.index, id=job)
        except StoreError as exc:
            if exc.status == 404:
                return None, None
            raise LeaseError(f"cannot read the lease of {job!r}: {exc}") from exc
        src = resp["_source"]
        expires, started = _dt(src.get("expires_at")), _dt(src.get("scheduled_started_at"))
        if expires is None or started is None:
            raise LeaseError(f"lease of {job!r} is malformed: {json.dumps(src)[:200]}")
        record = LeaseRecord(job, str(src["holder"]), str(src["token"]), expires, started)
        return record, (resp["_seq_no"], resp["_primary_term"])

    def write(self, record: LeaseRecord, cas: object) -> bool:
        body = {"job": record.job, "holder": record.holder, "token": record.token,
                "expires_at": record.expires_at.isoformat(),
                "scheduled_started_at": record.scheduled_started_at.isoformat()}
        kwargs: dict[str, Any] = {"index": self.index, "id": record.job, "document": body}
        if cas is None:
            kwargs["op_type"] = "create"
        elif isinstance(cas, tuple):
            kwargs["if_seq_no"], kwargs["if_primary_term"] = cas
        try:
            es_call(f"write the lease of {record.job!r}", self.client.index, **kwargs)
        except StoreError as exc:
            if exc.status == 409:
                return False
            raise LeaseError(f"cannot write the lease of {record.job!r}: {exc}") from exc
        return True
