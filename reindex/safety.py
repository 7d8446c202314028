"""The safety rules that stand between a bad listing and a mass deletion.

- A listing is whole or it is nothing: ``list_source`` returns every entry or
  raises ``ListingFailedError`` (an error after any number of entries, a
  document listed twice, an empty listing while the index holds documents).
- ``deletion_cap``: the most documents one run may delete without
  ``--allow-mass-delete``.

The third rule, confirming each "gone from the source" with ``get_document``
before deleting it, lives where the delete is prepared (``reconcile``).
"""

from __future__ import annotations

import math

from reindex.errors import ListingFailedError
from sources.base import Source, SourceEntry
from sources.errors import SourceError


def list_source(source: Source, *, indexed_live: int) -> dict[str, SourceEntry]:
    """The whole listing, or ``ListingFailedError``: never a partial one."""
    entries: dict[str, SourceEntry] = {}
    try:
        for entry in source.list_documents():
            if entry.document_id in entries:
                raise ListingFailedError(
                    f"source {source.name!r} listed document {entry.document_id!r} twice "
                    f"(after {len(entries)} entries): the listing is inconsistent"
                )
            entries[entry.document_id] = entry
    except SourceError as exc:
        raise ListingFailedError(
            f"listing source {source.name!r} failed after {len(entries)} entries: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    if not entries and indexed_live > 0:
        raise ListingFailedError(
            f"source {source.name!r} listed no documents while the index holds {indexed_live}: "
            "an empty listing is treated as an outage, not as 'everything is gone'"
        )
    return entries


def deletion_cap(indexed_live: int, fraction: float) -> int:
    return math.floor(indexed_live * fraction)
