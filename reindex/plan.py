"""The decision for each document: compare the source listing with the index (pure).

=====================  ==================  ======================  ============
source lists           index holds         decision                reason
=====================  ==================  ======================  ============
live v                 nothing             reindex                 missing
live v                 live below v        reindex                 behind
live v                 tombstone below v   reindex                 recreated
live v                 live v, chunks ok   up_to_date
live v                 live v, chunks off  repair                  chunk_count
unreadable (bad file)  anything            ahead (left alone)      unreadable
anything               another source's    ahead (left alone)      other_owner
anything               above the source    ahead (left alone)      index_newer
tombstone v            nothing             tombstone               never_indexed
tombstone v            live below v        delete                  tombstoned_at_source
nothing                live                delete                  gone_from_source
tombstone / nothing    tombstone           up_to_date (or repair if chunks remain)
=====================  ==================  ======================  ============

The index never goes back in time: a version the index holds above the
source's is reported, never undone. One owner per document: a document whose state
names another source than the one listed is that source's (``other_owner``), never
reindexed from, repaired against or deleted for this listing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from reindex.model import Decision, IndexedDocument, PlannedAction
from sources.base import SourceEntry


def decide(
    document_id: str, entry: SourceEntry | None, indexed: IndexedDocument | None,
    source_name: str | None = None,
) -> PlannedAction:
    src_v = entry.version if entry is not None else None
    idx_v = indexed.version if indexed is not None else None

    def act(decision: Decision, reason: str) -> PlannedAction:
        return PlannedAction(document_id, decision, reason, src_v, idx_v)

    if indexed is not None and indexed.owned_elsewhere(source_name):
        return act(Decision.AHEAD, "other_owner")  # compared only with its own source
    if entry is not None and entry.unreadable is not None:
        return act(Decision.AHEAD, "unreadable")  # no version to compare: never undone
    if indexed is None:
        if entry is None:
            return act(Decision.UP_TO_DATE, "unknown")
        return act(Decision.TOMBSTONE, "never_indexed") if entry.deleted else act(
            Decision.REINDEX, "missing"
        )
    if entry is None:
        if indexed.deleted:
            return _tombstone_checked(indexed, act)
        return act(Decision.DELETE, "gone_from_source")
    if indexed.version > entry.version:
        return act(Decision.AHEAD, "index_newer")
    if entry.deleted:
        if indexed.deleted:
            return _tombstone_checked(indexed, act)
        if indexed.version == entry.version:
            return act(Decision.AHEAD, "live_at_tombstone_version")
        return act(Decision.DELETE, "tombstoned_at_source")
    if indexed.version < entry.version:
        return act(Decision.REINDEX, "recreated" if indexed.deleted else "behind")
    if indexed.deleted:  # tombstone at the very version the source lists as live
        return act(Decision.AHEAD, "tombstone_at_live_version")
    if not indexed.chunks_agree:
        return act(Decision.REPAIR, "chunk_count")
    return act(Decision.UP_TO_DATE, "current")


def _tombstone_checked(
    indexed: IndexedDocument, act: Callable[[Decision, str], PlannedAction]
) -> PlannedAction:
    if indexed.chunks_agree:
        return act(Decision.UP_TO_DATE, "deleted")
    return act(Decision.REPAIR, "chunks_of_deleted")


def plan(
    listing: Mapping[str, SourceEntry], index: Mapping[str, IndexedDocument],
    source_name: str | None = None,
) -> Iterator[PlannedAction]:
    """One action per document known to either side (sorted for stable reports).

    ``source_name``: the listing's source; None compares every document with it.
    """
    for document_id in sorted(listing.keys() | index.keys()):
        yield decide(document_id, listing.get(document_id), index.get(document_id), source_name)
