"""The lag arithmetic: how far the index is behind the source, for one document.

Lag is measured against the source, never the pipeline (ARCHITECTURE rule 5):
0 when the index holds the source's current version, otherwise the time since
the source made the *first* change the index lacks. A listing only tells the
latest change of each document, so for a document that keeps changing the
monitor remembers, per document and indexed version, the earliest change time
it has seen of a newer version (``since``); without that memory a document
edited every minute would never look more than a minute behind.

=============================  ====================================  ==================
source says                    index holds                           lag from
=============================  ====================================  ==================
live v                         live >= v                             0 (current)
live v                         live < v, or tombstone < v            changed_at (behind)
live v                         nothing                               changed_at (missing)
deleted at v (tombstone)       live (any version < v)                changed_at (deleted)
deleted at v                   a tombstone, or nothing               0 (current)
nothing (folder: no record)    live                                  first seen absent
nothing                        tombstone                             0 (current)
unreadable (a bad file)        anything                              none (unreadable)
=============================  ====================================  ==================

An unreadable entry (the source holds the document but cannot read it: a
folder's file without permission, not UTF-8, a FIFO; see ``sources.base``)
has no lag figure: its version is unknown, so any number would be a guess.
It is its own status, counted apart (``policy_indexer_unreadable_documents``),
never "behind" and never "deleted at source".

A source clock ahead of ours (``changed_at`` in the future) gives lag 0 but the
document still counts as behind; it is also counted on its own so a skewed
clock is visible rather than hidden.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sources.base import SourceEntry
from store.model import DocumentState


class LagStatus(StrEnum):
    CURRENT = "current"
    BEHIND = "behind"
    MISSING_FROM_INDEX = "missing_from_index"
    DELETED_AT_SOURCE = "deleted_at_source"
    UNREADABLE = "unreadable"  # the source lists it but cannot read it: no lag figure


@dataclass(frozen=True, slots=True)
class DocumentLag:
    """``since`` is when the change the index lacks was made (None when current)."""

    document_id: str
    status: LagStatus
    since: datetime | None = None

    def seconds(self, now: datetime) -> float:
        """Lag at ``now``; never negative (a source clock ahead of ours reads as 0)."""
        if self.since is None:
            return 0.0
        return max(0.0, (now - self.since).total_seconds())


def _earliest(changed_at: datetime, remembered: datetime | None) -> datetime:
    return changed_at if remembered is None else min(changed_at, remembered)


def document_lag(
    document_id: str,
    source: SourceEntry | None,
    indexed: DocumentState | None,
    *,
    remembered: datetime | None = None,
    absent_since: datetime | None = None,
) -> DocumentLag | None:
    """The lag of one document, or None when neither side holds it.

    ``remembered``: the earliest change time already seen of a source version
    newer than ``indexed.version`` (kept by the monitor across cycles).
    ``absent_since``: for a document the source does not list at all, when the
    monitor first saw it absent (the source keeps no deletion time).
    """
    if source is None:
        if indexed is None or indexed.deleted:
            return None if indexed is None else DocumentLag(document_id, LagStatus.CURRENT)
        since = absent_since if absent_since is not None else remembered
        return DocumentLag(document_id, LagStatus.DELETED_AT_SOURCE, since)
    if source.unreadable is not None:
        return DocumentLag(document_id, LagStatus.UNREADABLE)
    if source.deleted:
        if indexed is None or indexed.deleted:
            # Nothing searchable on either side, whatever the tombstones' versions.
            return DocumentLag(document_id, LagStatus.CURRENT)
        if indexed.version >= source.version:
            # A live version at or above the source's tombstone: the source went
            # back in time; the index is not behind it.
            return DocumentLag(document_id, LagStatus.CURRENT)
        return DocumentLag(
            document_id,
            LagStatus.DELETED_AT_SOURCE,
            _earliest(source.changed_at, remembered),
        )
    if indexed is None:
        return DocumentLag(
            document_id, LagStatus.MISSING_FROM_INDEX, _earliest(source.changed_at, remembered)
        )
    if indexed.version >= source.version:
        return DocumentLag(document_id, LagStatus.CURRENT)
    status = LagStatus.MISSING_FROM_INDEX if indexed.deleted else LagStatus.BEHIND
    return DocumentLag(document_id, status, _earliest(source.changed_at, remembered))
