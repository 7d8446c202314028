"""The Elasticsearch store: chunks and document states behind aliases.

Works on the minimal distribution (no ``_delete_by_query``, no scripts): stale
chunks are found with a ``search_after`` query and deleted by id through bulk.
Every error from the client is translated here into the ``store.errors`` tree.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import elastic_transport
from elasticsearch import ApiError, Elasticsearch, NotFoundError

from chunker.model import Chunk
from store import es_mappings
from store.errors import RejectedDocumentError, StoreError, StoreSetupError, TransientStoreError
from store.model import ChunkRef, DocumentState

T = TypeVar("T")
_PAGE = 1000


@dataclass(frozen=True)
class IndexNames:
    """Aliases, concrete indices and templates derived from one prefix."""

    prefix: str

    @property
    def chunks(self) -> str:
        return f"{self.prefix}-chunks"

    @property
    def states(self) -> str:
        return f"{self.prefix}-document-states"

    def first_index(self, alias: str) -> str:
        return f"{alias}-000001"


def _is_transient_status(status: int) -> bool:
    return status == 429 or status >= 500


def _translate(what: str, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return call(*args, **kwargs)
    except (elastic_transport.ConnectionError, elastic_transport.ConnectionTimeout) as exc:
        raise TransientStoreError(f"{what}: Elasticsearch unreachable: {exc}") from exc
    except ApiError as exc:
        if _is_transient_status(exc.meta.status):
            raise TransientStoreError(f"{what}: HTTP {exc.meta.status}: {exc}") from exc
        raise StoreError(f"{what}: HTTP {exc.meta.status}: {exc}") from exc
    except elastic_transport.TransportError as exc:
        raise TransientStoreError(f"{what}: {exc}") from exc


def _parse_dt(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


class ElasticsearchStore:
    def __init__(
        self,
        client: Elasticsearch,
        prefix: str,
        *,
        bulk_max_actions: int = 500,
        bulk_max_bytes: int = 5 * 1024 * 1024,
    ) -> None:
        self.client = client
        self.names = IndexNames(prefix)
        self.bulk_max_actions = bulk_max_actions
        self.bulk_max_bytes = bulk_max_bytes

    @classmethod
    def connect(
        cls, url: str, prefix: str, *, api_key: str | None = None, timeout_s: float = 10.0
    ) -> ElasticsearchStore:
        client = Elasticsearch(
            url,
            api_key=api_key,
            request_timeout=timeout_s,
            max_retries=0,  # the worker retries, with backoff, in one place
            retry_on_timeout=False,
        )
        return cls(client, prefix)

    # -- set-up ------------------------------------------------------------
    def ensure_ready(self) -> None:
        for alias, props in (
            (self.names.chunks, es_mappings.CHUNK_PROPERTIES),
            (self.names.states, es_mappings.STATE_PROPERTIES),
        ):
            body = es_mappings.template_body(f"{alias}-*", props)
            _translate(
                f"put index template {alias!r}",
                self.client.indices.put_index_template,
                name=alias,
                **body,
            )
            if _translate(f"check alias {alias!r}", self.client.indices.exists_alias, name=alias):
                continue
            try:
                _translate(
                    f"create index for alias {alias!r}",
                    self.client.indices.create,
                    index=self.names.first_index(alias),
                    aliases={alias: {"is_write_index": True}},
                )
            except StoreError as exc:
                if "resource_already_exists_exception" not in str(exc):
                    raise StoreSetupError(str(exc)) from exc

    def delete_everything(self) -> None:
        """Remove this prefix's indices and templates (tests)."""
        for alias in (self.names.chunks, self.names.states):
            self.client.options(ignore_status=404).indices.delete(index=f"{alias}-*")
            self.client.options(ignore_status=404).indices.delete_index_template(name=alias)

    # -- document states ---------------------------------------------------
    def get_state(self, document_id: str) -> DocumentState | None:
        try:
            resp = _translate(
                f"get state of {document_id!r}",
                self.client.get,
                index=self.names.states,
                id=document_id,
            )
        except StoreError as exc:
            if isinstance(exc.__cause__, NotFoundError):
                return None
            raise
        return _state_from_source(resp["_source"])

    def put_state(self, state: DocumentState) -> bool:
        try:
            _translate(
                f"put state of {state.document_id!r}",
                self.client.index,
                index=self.names.states,
                id=state.document_id,
                document=_state_to_source(state),
                version=state.version,
                version_type="external_gte",
            )
        except StoreError as exc:
            cause = exc.__cause__
            if isinstance(cause, ApiError) and cause.meta.status == 409:
                return False
            raise
        return True

    def get_states(self, document_ids: Sequence[str]) -> dict[str, DocumentState]:
        """States of many documents in one real-time ``mget``."""
        if not document_ids:
            return {}
        resp = _translate(
            "get states", self.client.mget, index=self.names.states, ids=list(document_ids)
        )
        return {
            d["_id"]: _state_from_source(d["_source"]) for d in resp["docs"] if d.get("found")
        }

    def put_states(self, states: Sequence[DocumentState]) -> set[str]:
        """Write many states, each guarded like ``put_state``; returns the ids that lost."""
        lines = []
        for state in states:
            action = {"index": {"_index": self.names.states, "_id": state.document_id,
                                "version": state.version, "version_type": "external_gte"}}
            body = json.dumps(action) + "\n" + json.dumps(_state_to_source(state)) + "\n"
            lines.append((state.document_id, body.encode()))
        lost: set[str] = set()
        refused = self._bulk(lines, "put states", conflicts=lost)
        if refused:
            raise StoreError(f"Elasticsearch refused document states: {refused[:3]}")
        return lost

    def find_chunks_below(self, versions: dict[str, int]) -> list[ChunkRef]:
        """Chunks of many documents below each one's version, in one ``msearch``."""
        docs = list(versions)
        if not docs:
            return []
        searches: list[dict[str, Any]] = []
        for doc in docs:
            searches.append({"index": self.names.chunks})
            searches.append({
                "query": {"bool": {"filter": [
                    {"term": {"document_id": doc}},
                    {"range": {"version": {"lt": versions[doc]}}},
                ]}},
                "size": _PAGE, "_source": ["document_id", "version", "indexed_at"],
                "track_total_hits": False,
            })
        resp = _translate("find older chunks", self.client.msearch, searches=searches)
        refs: list[ChunkRef] = []
        for doc, answer in zip(docs, resp["responses"], strict=True):
            if "error" in answer:
                status = int(answer.get("status", 500))
                cls = TransientStoreError if _is_transient_status(status) else StoreError
                raise cls(f"find older chunks of {doc!r}: {answer['error']}")
            hits = answer["hits"]["hits"]
            if len(hits) >= _PAGE:  # rare: page through this one
                refs.extend(self.find_chunks(doc, below_version=versions[doc]))
                continue
            refs.extend(_ref(hit) for hit in hits)
        return refs

    # -- chunks ------------------------------------------------------------
    def write_chunks(self, chunks: Sequence[Chunk]) -> int:
        indexed_at = datetime.now(UTC).isoformat()
        lines: list[tuple[str, bytes]] = []
        for chunk in chunks:
            action = json.dumps({"index": {"_index": self.names.chunks, "_id": chunk.chunk_id}})
            source = chunk.model_dump(mode="json")
            source["indexed_at"] = indexed_at
            body = f"{action}\n{json.dumps(source, ensure_ascii=False)}\n".encode()
            lines.append((chunk.chunk_id, body))
        refused = self._bulk(lines, "write chunks")
        if refused:
            reasons = "; ".join(f"{cid}: {why}" for cid, why in refused[:3])
            raise RejectedDocumentError(
                f"Elasticsearch refused {len(refused)} chunk(s): {reasons}",
                item_ids=tuple(cid for cid, _ in refused),
            )
        return len(lines)

    def delete_chunks(self, chunk_ids: Iterable[str]) -> int:
        index = self.names.chunks
        lines = [
            (cid, (json.dumps({"delete": {"_index": index, "_id": cid}}) + "\n").encode())
            for cid in dict.fromkeys(chunk_ids)
        ]
        if not lines:
            return 0
        counter: list[int] = [0]
        refused = self._bulk(lines, "delete chunks", deleted=counter)
        if refused:
            raise StoreError(f"Elasticsearch refused deletes: {refused[:3]}")
        return counter[0]

    def _bulk(
        self,
        lines: Sequence[tuple[str, bytes]],
        what: str,
        deleted: list[int] | None = None,
        conflicts: set[str] | None = None,
    ) -> list[tuple[str, str]]:
        """Send the lines in batches cut by count and bytes; check every item.

        Returns (id, reason) for items refused for their content. A transient
        item failure (429, 5xx) raises ``TransientStoreError``: writing again is
        harmless because ids are deterministic.
        """
        refused: list[tuple[str, str]] = []
        for batch in _batches(lines, self.bulk_max_actions, self.bulk_max_bytes):
            payload = b"".join(body for _, body in batch)
            resp = _translate(what, self.client.bulk, operations=payload)
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
                if _is_transient_status(status):
                    raise TransientStoreError(f"{what}: item {result.get('_id')!r}: {status}")
                if status >= 300:
                    refused.append((str(result.get("_id")), json.dumps(result.get("error"))))
                elif op == "delete" and deleted is not None:
                    deleted[0] += 1
        return refused

    def find_chunks(
        self, document_id: str, *, below_version: int | None = None
    ) -> Iterator[ChunkRef]:
        filters: list[dict[str, Any]] = [{"term": {"document_id": document_id}}]
        if below_version is not None:
            filters.append({"range": {"version": {"lt": below_version}}})
        return self._search_refs({"bool": {"filter": filters}})

    def iter_chunks(self) -> Iterator[ChunkRef]:
        return self._search_refs({"match_all": {}})

    def _search_refs(self, query: dict[str, Any]) -> Iterator[ChunkRef]:
        for hit in self._search_all(
            self.names.chunks, query, "chunk_id", ["document_id", "version", "indexed_at"]
        ):
            yield _ref(hit)

    def iter_states(self) -> Iterator[DocumentState]:
        for hit in self._search_all(self.names.states, {"match_all": {}}, "document_id", None):
            yield _state_from_source(hit["_source"])

    def _search_all(
        self, index: str, query: dict[str, Any], sort_field: str, fields: list[str] | None
    ) -> Iterator[dict[str, Any]]:
        """Page through every hit with search_after on a unique keyword (no PIT needed)."""
        after: list[Any] | None = None
        while True:
            kwargs: dict[str, Any] = {
                "index": index,
                "query": query,
                "sort": [{sort_field: "asc"}],
                "size": _PAGE,
                "track_total_hits": False,
            }
            if fields is not None:
                kwargs["source_includes"] = fields
            if after is not None:
                kwargs["search_after"] = after
            resp = _translate(f"search {index!r}", self.client.search, **kwargs)
            hits = resp["hits"]["hits"]
            yield from hits
            if len(hits) < _PAGE:
                return
            after = hits[-1]["sort"]

    def refresh(self) -> None:
        _translate(
            "refresh", self.client.indices.refresh, index=f"{self.names.chunks},{self.names.states}"
        )

    def close(self) -> None:
        self.client.close()


def _batches(
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


def _ref(hit: dict[str, Any]) -> ChunkRef:
    src = hit["_source"]
    indexed_at = _parse_dt(src.get("indexed_at"))
    return ChunkRef(hit["_id"], src["document_id"], int(src["version"]), indexed_at)


def _state_to_source(state: DocumentState) -> dict[str, Any]:
    return {
        "document_id": state.document_id,
        "version": state.version,
        "changed_at": state.changed_at.isoformat(),
        "indexed_at": state.indexed_at.isoformat(),
        "chunk_ids": list(state.chunk_ids),
        "superseded_chunk_ids": list(state.superseded_chunk_ids),
        "content_hash": state.content_hash,
        "deleted": state.deleted,
        "tombstone_version": state.tombstone_version,
    }


def _state_from_source(src: dict[str, Any]) -> DocumentState:
    changed_at = _parse_dt(src["changed_at"])
    indexed_at = _parse_dt(src["indexed_at"])
    if changed_at is None or indexed_at is None:
        raise StoreError(f"document state {src.get('document_id')!r} lacks its dates")
    return DocumentState(
        document_id=src["document_id"],
        version=int(src["version"]),
        changed_at=changed_at,
        indexed_at=indexed_at,
        chunk_ids=tuple(src.get("chunk_ids") or ()),
        content_hash=src.get("content_hash"),
        deleted=bool(src.get("deleted")),
        superseded_chunk_ids=tuple(src.get("superseded_chunk_ids") or ()),
    )
