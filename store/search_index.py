"""The search side of a store: filters inside both legs, and the vectors the dense leg reads.

Implemented beside each store, as a view over it (``store.memory_search``,
``store.sqlite_search``, ``store.es_search``), so the ``Store`` protocol the
worker and the delete step use is unchanged. ``retrieval.service`` ranks what
these return; ``tests/unit/store/test_search_contract.py`` holds them to one
contract.

Every filter is applied inside the query, never to its results, so a page is
never short of chunks the caller may see nor padded with ones it may not:

- **current version**: only chunks of a document's indexed state version, not
  of a deleted document (a version between its chunk write and its state
  write, or one the delete step has yet to remove, is never found);
- **scope**: with no request scope, every chunk; otherwise a chunk applies when
  it is for everyone (``is_for_everyone``) or shares a value with the request;
- **date**: ``valid_from <= as_of <= valid_to``, a missing end is open;
- **permission**: a chunk is visible when every label it carries is among the
  caller's (no labels: everyone). ``caller_labels=None`` switches the filter
  off: only the service's ``no_access`` check uses that, and it returns no text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from chunker.model import Chunk
from store.search import SearchHit

# Scope values that mean "for everyone": ``all``, ``everyone``, ``global``, ``*`` and any
# ``all-<kind>`` (the sample library's ``all-cities``). A document for everyone applies to
# every order, whatever its city or seller, exactly like a document with no scope.
EVERYONE_SCOPES = frozenset({"all", "everyone", "global", "*", "any"})
MAX_CALLER_LABELS = 256
MAX_LABEL_CHARS = 256
MAX_SEARCH_LIMIT = 1000

Vector = npt.NDArray[np.float32]


def vector_rows(vector: Sequence[float] | Sequence[Sequence[float]]) -> npt.NDArray[np.float32]:
    """A stored value as a matrix of rows: one vector is one row, windows are a row each.

    Refused (ValueError): an empty value, rows of different lengths, more than two axes,
    and a value that is not finite (a NaN would rank anywhere).
    """
    try:
        matrix = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"a vector must be numbers, or rows of numbers of one length: {exc}") \
            from exc
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise ValueError(f"a vector must be 1 or 2 axes and not empty, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("a vector holds a NaN or an infinity")
    return matrix


class SearchInputError(ValueError):
    """A caller label, scope or limit the search cannot use (the message names it)."""


def is_for_everyone(scope: Iterable[str]) -> bool:
    """No scope, or a scope value that names everyone (see ``EVERYONE_SCOPES``)."""
    values = [value.strip().lower() for value in scope]
    return not values or any(v in EVERYONE_SCOPES or v.startswith("all-") for v in values)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def check_labels(labels: Iterable[object]) -> frozenset[str]:
    """The caller's labels, validated: strings, non-empty, no control character, bounded.

    Every store query goes through here (``SearchFilters`` calls it), so no store ever
    sees a label that could make its query match more: SQL's ``NOT IN`` with a NULL
    never excludes anything, and a NUL cuts a C string short (``"public\x00agents"``
    read as ``public``). A lone surrogate is refused too: no store can encode it.
    """
    checked: set[str] = set()
    for label in labels:
        if not isinstance(label, str):
            raise SearchInputError(f"caller label {label!r} is not a string")
        if not label.strip() or _CONTROL.search(label) or len(label) > MAX_LABEL_CHARS:
            raise SearchInputError(
                f"caller label {label[:40]!r} is empty, has a control character or is longer "
                f"than {MAX_LABEL_CHARS} characters"
            )
        try:
            label.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise SearchInputError(f"caller label {label[:40]!r} is not valid Unicode") from exc
        checked.add(label)
        if len(checked) > MAX_CALLER_LABELS:
            raise SearchInputError(
                f"caller has more than {MAX_CALLER_LABELS} labels; at most {MAX_CALLER_LABELS}"
            )
    return frozenset(checked)


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise SearchInputError(f"limit={limit!r}: must be between 1 and {MAX_SEARCH_LIMIT}")
    return limit


@dataclass(frozen=True)
class SearchFilters:
    as_of: date
    scope: tuple[str, ...] = ()
    caller_labels: frozenset[str] | None = frozenset()

    def __post_init__(self) -> None:
        # Validated here, where every store query starts, whoever built the filters.
        if self.caller_labels is not None:
            object.__setattr__(self, "caller_labels", check_labels(self.caller_labels))

    def without_permissions(self) -> SearchFilters:
        return SearchFilters(self.as_of, self.scope, None)

    def admits(self, chunk: Chunk) -> bool:
        """The rule in Python, for the in-memory store and for checking the others."""
        return self.admits_date(chunk) and self.admits_scope(chunk) and self.admits_labels(chunk)

    def admits_date(self, chunk: Chunk) -> bool:
        """``valid_from <= as_of <= valid_to``, a missing end open."""
        meta = chunk.metadata
        if meta.valid_from is not None and meta.valid_from > self.as_of:
            return False
        return meta.valid_to is None or meta.valid_to >= self.as_of

    def admits_scope(self, chunk: Chunk) -> bool:
        """No request scope; or a chunk for everyone; or one sharing a value with it."""
        scope = chunk.metadata.scope
        return not self.scope or is_for_everyone(scope) or bool(set(scope) & set(self.scope))

    def admits_labels(self, chunk: Chunk) -> bool:
        """Every label of the chunk is the caller's (the filter off: ``caller_labels=None``)."""
        return self.caller_labels is None or set(chunk.metadata.access_labels) <= \
            self.caller_labels


class SearchIndex(Protocol):
    """What ``retrieval.service.SearchService`` asks of a store."""

    def keyword_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[SearchHit]:
        """Chunks matching any of the analysed ``terms`` (BM25), best first."""

    def vector_search(
        self, model_id: str, vector: Vector, filters: SearchFilters, limit: int
    ) -> list[SearchHit]:
        """Chunks with a vector of ``model_id``, by cosine similarity (the score), best first."""

    def filtered_chunks(self, filters: SearchFilters, limit: int) -> list[Chunk]:
        """Up to ``limit`` chunks the filters admit (to tell whether they leave <= k)."""

    def get_chunks(self, chunk_ids: Sequence[str], filters: SearchFilters) -> list[Chunk]:
        """The chunks of those ids that the filters admit (neighbours), in no set order."""

    def without_vectors(self, model_id: str, chunk_ids: Sequence[str]) -> set[str]:
        """Those of ``chunk_ids`` (stored chunks) that have no vector of ``model_id`` yet:
        the ones the dense leg cannot see, so the search may not read its silence."""


class ChunkReader(Protocol):
    """Chunks by id with no filter at all: ``retrieval.citations`` reads the clause a reply
    cites to say *why* it does not fit the order (scope, date, labels), and returns none
    of its text to a caller who may not see it."""

    def read_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The stored chunks of those ids (any version, any scope, date or label)."""


@runtime_checkable
class BothLegs(Protocol):
    """A store that runs both legs in one round trip (Elasticsearch's ``_msearch``)."""

    def both_legs(
        self,
        terms: Sequence[str],
        vectors: Sequence[tuple[str, Vector]],
        filters: SearchFilters,
        limit: int,
    ) -> tuple[list[SearchHit], list[list[SearchHit]]]:
        """(keyword hits, the dense hits of each (view id, vector)), each best first."""


class VectorStore(Protocol):
    """``embeddings.backfill.VectorIndex``: what the vector backfill asks of a store."""

    def chunks_missing_vectors(self, model_id: str, limit: int) -> list[tuple[str, str]]:
        """(chunk_id, text to embed) of live chunks with no vector for model_id, oldest first."""

    def put_vectors(
        self, model_id: str, vectors: Mapping[str, Sequence[float] | Sequence[Sequence[float]]]
    ) -> int:
        """Store vectors by chunk id (a chunk deleted meanwhile is skipped); how many stored.
        A chunk's value is one vector or one per window; ``vector_search`` scores a chunk by
        its best row."""

    def vector_backlog(self, model_id: str) -> tuple[int, datetime | None]:
        """How many live chunks lack a vector for model_id, and indexed_at of the oldest."""
