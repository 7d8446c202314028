"""The delete step: remove a document's chunks older than its current version.

Runs after the new version's chunks and state are written. First the chunk ids
the state says were superseded (visible at once, no refresh needed), then a
search for any chunk of the document with a lower version (catches older
leftovers). It deletes nothing at or above ``current_version``, so it is safe
to run while workers write; ``not_found`` is success, so running it twice (or
finishing an interrupted run) is harmless.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import structlog

from store.base import Store
from store.batch import find_chunks_below
from store.model import ChunkRef

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class DeleteResult:
    requested: int
    deleted: int


def _version_of(chunk_id: str) -> int | None:
    """The version encoded in ``<document_id>@v<version>#<section>``, or None."""
    head, sep, _ = chunk_id.rpartition("#")
    if not sep:
        return None
    _, sep, version = head.rpartition("@v")
    return int(version) if sep and version.isdigit() else None


def delete_older_versions(
    store: Store,
    document_id: str,
    current_version: int,
    known_ids: Iterable[str] = (),
) -> DeleteResult:
    """Delete every chunk of ``document_id`` with a version below ``current_version``.

    ``known_ids`` (the superseded version's chunk ids from the state) are
    deleted too, but only those whose id encodes an older version.
    """
    targets = [
        cid for cid in known_ids if (v := _version_of(cid)) is not None and v < current_version
    ]
    found: list[ChunkRef] = list(store.find_chunks(document_id, below_version=current_version))
    targets.extend(ref.chunk_id for ref in found if ref.version < current_version)
    unique = list(dict.fromkeys(targets))
    deleted = store.delete_chunks(unique) if unique else 0
    if unique:
        log.debug(
            "deleted older chunks",
            document_id=document_id,
            below_version=current_version,
            requested=len(unique),
            deleted=deleted,
        )
    return DeleteResult(requested=len(unique), deleted=deleted)


def delete_older_versions_many(
    store: Store, targets: Mapping[str, tuple[int, Iterable[str]]]
) -> DeleteResult:
    """``delete_older_versions`` for many documents: one search round, one bulk delete.

    ``targets`` maps a document id to (current version, known older chunk ids).
    """
    if not targets:
        return DeleteResult(0, 0)
    ids: list[str] = []
    for version, known in targets.values():
        ids.extend(cid for cid in known if (v := _version_of(cid)) is not None and v < version)
    found = find_chunks_below(store, {doc: version for doc, (version, _) in targets.items()})
    ids.extend(ref.chunk_id for ref in found if ref.version < targets[ref.document_id][0])
    unique = list(dict.fromkeys(ids))
    deleted = store.delete_chunks(unique) if unique else 0
    return DeleteResult(requested=len(unique), deleted=deleted)
