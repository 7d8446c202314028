"""The Elasticsearch store: chunks and document states behind aliases.

Works on the minimal distribution (no ``_delete_by_query``, no scripts): stale
chunks are found with a ``search_after`` query and deleted by id through bulk.
Requests and error translation live in ``store.es_requests``.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from elasticsearch import Elasticsearch

from chunker.model import Chunk
from foundation.es_errors import is_blocked, is_transient_status
from store import es_mappings
from store.errors import (
    RejectedDocumentError,
    StoreError,
    StoreSetupError,
    StoreUnavailableError,
    TransientStoreError,
)
from store.es_requests import PAGE, bulk, parse_dt, search_all, translate
from store.es_search_fields import search_fields
from store.limits import BULK_MAX_ACTIONS, BULK_MAX_BYTES
from store.model import ChunkRef, DocumentState


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


# Document ids per ``terms`` query (Elasticsearch's own limit is 65,536).
TERMS_BATCH = 1000


class ElasticsearchStore:
    def __init__(
        self,
        client: Elasticsearch,
        prefix: str,
        *,
        bulk_max_actions: int = BULK_MAX_ACTIONS,
        bulk_max_bytes: int = BULK_MAX_BYTES,
        scan_page_size: int = PAGE,
        vector_dims: int = es_mappings.DEFAULT_VECTOR_DIMS,
        layout: es_mappings.IndexLayout = es_mappings.ONE_NODE,
    ) -> None:
        self.client = client
        self.layout = layout
        self.chunk_properties = es_mappings.chunk_properties(vector_dims)
        self.names = IndexNames(prefix)
        self.bulk_max_actions = bulk_max_actions
        self.bulk_max_bytes = bulk_max_bytes
        # Hits per request when scanning whole indices (iter_chunks, iter_states).
        self.scan_page_size = scan_page_size

    @classmethod
    def connect(
        cls,
        urls: str | Sequence[str],
        prefix: str,
        *,
        api_key: str | None = None,
        basic_auth: tuple[str, str] | None = None,
        ca_file: str | None = None,
        ca_fingerprint: str | None = None,
        verify_certs: bool = True,
        timeout_s: float = 10.0,
        layout: es_mappings.IndexLayout = es_mappings.ONE_NODE,
    ) -> ElasticsearchStore:
        """A store on one node or several (the client spreads requests over them).

        Credentials are an API key or a user and password, never inside a URL;
        ``ca_file`` or ``ca_fingerprint`` (the cluster CA's SHA-256) checks TLS.
        A node refusing connections is skipped for the next one; refused credentials
        and unverified certificates raise ``StoreAccessError`` (``store.es_requests``).
        """
        # the same URL twice is one node (the client's pool refuses duplicates)
        nodes = [urls] if isinstance(urls, str) else list(dict.fromkeys(urls))
        if not nodes:
            raise ValueError("ElasticsearchStore.connect: urls is empty; give at least one node")
        tls: dict[str, Any] = {}
        if ca_file is not None:
            tls["ca_certs"] = ca_file
        if ca_fingerprint is not None:
            tls["ssl_assert_fingerprint"] = ca_fingerprint
        if not verify_certs:
            tls["verify_certs"] = False
            tls["ssl_show_warn"] = False
        client = Elasticsearch(
            nodes,
            api_key=api_key,
            basic_auth=basic_auth,
            request_timeout=timeout_s,
            # A node that cannot be reached is marked dead and the request goes to the
            # next one (that is what several URLs are for); nothing else is retried
            # here: the worker retries, with backoff, in one place.
            max_retries=len(nodes) - 1,
            retry_on_status=(),
            retry_on_timeout=False,
            **tls,
        )
        return cls(client, prefix, layout=layout)

    # -- set-up ------------------------------------------------------------
    def ensure_ready(self) -> None:
        self._ensure_mappings(((self.names.chunks, self.chunk_properties),
                               (self.names.states, es_mappings.STATE_PROPERTIES)))

    def ensure_vector_field(self, view_id: str, dims: int) -> str:
        """The field of a dense view's vectors, mapped in the chunk index and its template
        (an additive change: a view added to the configuration needs no new index).

        Refused (``StoreError``) when the field exists with other dimensions: vectors of
        another model under the same id, which only a new view id (a ``reembed``) fixes.
        """
        field = es_mappings.view_field(view_id)
        wanted = es_mappings.view_property(dims)
        if self.chunk_properties.get(field) == wanted:
            return field
        self.chunk_properties[field] = wanted
        try:
            self._ensure_mappings(((self.names.chunks, self.chunk_properties),))
        except StoreError as exc:
            del self.chunk_properties[field]
            raise StoreError(
                f"the vectors of view {view_id!r} cannot be mapped as {dims} dimensions "
                f"(field {field}): {exc}"
            ) from exc
        return field

    def _ensure_mappings(self, indices: Iterable[tuple[str, dict[str, Any]]]) -> None:
        for alias, props in indices:
            body = es_mappings.template_body(f"{alias}-*", props, self.layout)
            translate(
                f"put index template {alias!r}",
                self.client.indices.put_index_template,
                name=alias,
                **body,
            )
            if translate(f"check alias {alias!r}", self.client.indices.exists_alias, name=alias):
                # an index made by an older version gains the fields added since (additive)
                translate(
                    f"update mapping of {alias!r}", self.client.indices.put_mapping,
                    index=alias, properties=props,
                )
                continue
            try:
                translate(
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
            resp = translate(
                f"get state of {document_id!r}",
                self.client.get,
                index=self.names.states,
                id=document_id,
            )
        except StoreError as exc:
            if exc.status == 404:
                return None
            raise
        return _state_from_source(resp["_source"])

    def put_state(self, state: DocumentState) -> bool:
        try:
            translate(
                f"put state of {state.document_id!r}",
                self.client.index,
                index=self.names.states,
                id=state.document_id,
                document=_state_to_source(state),
                version=state.version,
                version_type="external_gte",
            )
        except StoreError as exc:
            if exc.status == 409:
                return False
            raise
        return True

    def get_states(self, document_ids: Sequence[str]) -> dict[str, DocumentState]:
        """States of many documents in one real-time ``mget``."""
        if not document_ids:
            return {}
        resp = translate(
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
        refused = bulk(
            self.client, lines, "put states", conflicts=lost,
            max_actions=self.bulk_max_actions, max_bytes=self.bulk_max_bytes,
        )
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
                "size": PAGE, "_source": ["document_id", "version", "indexed_at"],
                "track_total_hits": False,
            })
        resp = translate("find older chunks", self.client.msearch, searches=searches)
        refs: list[ChunkRef] = []
        for doc, answer in zip(docs, resp["responses"], strict=True):
            if "error" in answer:
                status = int(answer.get("status", 500))
                cls = (StoreUnavailableError if is_blocked(answer["error"])
                       else TransientStoreError if is_transient_status(status) else StoreError)
                raise cls(f"find older chunks of {doc!r}: {answer['error']}")
            hits = answer["hits"]["hits"]
            if len(hits) >= PAGE:  # rare: page through this one
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
            # pydantic's own JSON encoder (twice as fast as dump + json.dumps),
            # with the store's fields appended to the object.
            source = chunk.model_dump_json()[:-1] + f',"indexed_at":"{indexed_at}",'
            source += json.dumps(search_fields(chunk))[1:]
            body = f"{action}\n{source}\n".encode()
            lines.append((chunk.chunk_id, body))
        refused = bulk(
            self.client, lines, "write chunks",
            max_actions=self.bulk_max_actions, max_bytes=self.bulk_max_bytes,
        )
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
        refused = bulk(
            self.client, lines, "delete chunks", deleted=counter,
            max_actions=self.bulk_max_actions, max_bytes=self.bulk_max_bytes,
        )
        if refused:
            raise StoreError(f"Elasticsearch refused deletes: {refused[:3]}")
        return counter[0]

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
        for hit in search_all(
            self.client, self.names.chunks, query, "chunk_id",
            ["document_id", "version", "indexed_at"], page=self.scan_page_size,
        ):
            yield _ref(hit)

    def iter_states(self) -> Iterator[DocumentState]:
        for hit in search_all(
            self.client, self.names.states, {"match_all": {}}, "document_id", None,
            page=self.scan_page_size,
        ):
            yield _state_from_source(hit["_source"])

    # -- what changed (store.base.ChangeReads: the monitor's incremental cycle) ----
    def iter_states_since(self, since: datetime) -> Iterator[DocumentState]:
        query = {"range": {"indexed_at": {"gte": since.isoformat()}}}
        for hit in search_all(self.client, self.names.states, query, "document_id", None,
                              page=self.scan_page_size):
            yield _state_from_source(hit["_source"])

    def iter_chunks_since(self, since: datetime) -> Iterator[ChunkRef]:
        return self._search_refs({"range": {"indexed_at": {"gte": since.isoformat()}}})

    def iter_chunks_of(self, document_ids: Collection[str]) -> Iterator[ChunkRef]:
        ids = sorted(document_ids)
        for start in range(0, len(ids), TERMS_BATCH):
            yield from self._search_refs(
                {"terms": {"document_id": ids[start:start + TERMS_BATCH]}})

    def count_chunks(self) -> int:
        resp = translate("count chunks", self.client.count, index=self.names.chunks)
        return int(resp["count"])

    def refresh(self) -> None:
        translate(
            "refresh", self.client.indices.refresh, index=f"{self.names.chunks},{self.names.states}"
        )

    def close(self) -> None:
        self.client.close()


def _ref(hit: dict[str, Any]) -> ChunkRef:
    src = hit["_source"]
    indexed_at = parse_dt(src.get("indexed_at"))
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
        "owner": state.owner,
    }


def _state_from_source(src: dict[str, Any]) -> DocumentState:
    changed_at = parse_dt(src["changed_at"])
    indexed_at = parse_dt(src["indexed_at"])
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
        owner=src.get("owner"),
    )
