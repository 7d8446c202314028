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

Which row a document is in is the comparison's verdict (``foundation.comparison``,
the one shared by the monitor, ``status``, the passage freshness and the reconcile);
this module turns a verdict into a lag.

A source clock ahead of ours (``changed_at`` in the future) gives lag 0 but the
document still counts as behind; it is also counted on its own so a skewed
clock is visible rather than hidden.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from foundation.comparison import Verdict, verdict
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


# What each verdict of the comparison is as lag; a verdict not here has no lag status:
# ``absent`` (neither side holds it), ``other_owner`` and ``refused`` (each reader says
# those its own way).
_STATUS: dict[Verdict, LagStatus] = {
    Verdict.CURRENT: LagStatus.CURRENT,
    Verdict.INDEX_NEWER: LagStatus.CURRENT,
    Verdict.TOMBSTONE_AT_LIVE_VERSION: LagStatus.CURRENT,
    # A live version at the source's tombstone version: the index is not behind it.
    Verdict.LIVE_AT_TOMBSTONE_VERSION: LagStatus.CURRENT,
    # Nothing searchable on either side, whatever the tombstones' versions.
    Verdict.NEVER_INDEXED: LagStatus.CURRENT,
    Verdict.DELETED: LagStatus.CURRENT,
    Verdict.MISSING: LagStatus.MISSING_FROM_INDEX,
    Verdict.RECREATED: LagStatus.MISSING_FROM_INDEX,
    Verdict.BEHIND: LagStatus.BEHIND,
    Verdict.DELETED_AT_SOURCE: LagStatus.DELETED_AT_SOURCE,
    Verdict.GONE_FROM_SOURCE: LagStatus.DELETED_AT_SOURCE,
    Verdict.UNREADABLE: LagStatus.UNREADABLE,
}


def _earliest(changed_at: datetime, remembered: datetime | None) -> datetime:
    return changed_at if remembered is None else min(changed_at, remembered)


def verdict_lag(
    document_id: str,
    found: Verdict,
    source: SourceEntry | None,
    *,
    remembered: datetime | None = None,
    absent_since: datetime | None = None,
) -> DocumentLag | None:
    """The lag of a document the comparison (``foundation.comparison``) gave ``found``;
    None for a verdict with no lag status (``absent``, ``other_owner``, ``refused``).

    ``source``: the listing's entry the verdict was made from. ``remembered``: the
    earliest change time already seen of a source version newer than the indexed one
    (kept by the monitor across cycles). ``absent_since``: for a document the source
    does not list at all, when the monitor first saw it absent (the source keeps no
    deletion time).
    """
    status = _STATUS.get(found)
    if status is None:
        return None
    if status in (LagStatus.CURRENT, LagStatus.UNREADABLE):
        return DocumentLag(document_id, status)
    if source is None:  # gone from the source
        since = absent_since if absent_since is not None else remembered
        return DocumentLag(document_id, status, since)
    return DocumentLag(document_id, status, _earliest(source.changed_at, remembered))


def document_lag(
    document_id: str,
    source: SourceEntry | None,
    indexed: DocumentState | None,
    *,
    remembered: datetime | None = None,
    absent_since: datetime | None = None,
) -> DocumentLag | None:
    """The lag of one document, or None when neither side holds it.

    The comparison of the two sides is ``foundation.comparison.verdict`` (every owner
    compared); ``remembered`` and ``absent_since`` as in ``verdict_lag``.
    """
    found = verdict(document_id, source, indexed)
    return verdict_lag(document_id, found, source, remembered=remembered,
                       absent_since=absent_since)
