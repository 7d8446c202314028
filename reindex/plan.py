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

Which row a document is in is the comparison's verdict
(``foundation.comparison.verdict``, the one the monitor, ``status`` and the
passage freshness read too); this module turns it into an action. The index
never goes back in time: a version the index holds above the source's is
reported, never undone. One owner per document: a document whose state
names another source than the one listed is that source's (``other_owner``), never
reindexed from, repaired against or deleted for this listing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from foundation.comparison import Verdict, verdict
from reindex.model import Decision, IndexedDocument, PlannedAction
from sources.base import SourceEntry

# The action for each verdict of the comparison; ``current`` and ``deleted`` are
# checked against the chunks present first (``_checked``).
_ACTIONS: dict[Verdict, Decision] = {
    Verdict.OTHER_OWNER: Decision.AHEAD,  # compared only with its own source
    Verdict.UNREADABLE: Decision.AHEAD,  # no version to compare: never undone
    Verdict.ABSENT: Decision.UP_TO_DATE,
    Verdict.NEVER_INDEXED: Decision.TOMBSTONE,
    Verdict.MISSING: Decision.REINDEX,
    Verdict.GONE_FROM_SOURCE: Decision.DELETE,
    Verdict.INDEX_NEWER: Decision.AHEAD,
    Verdict.LIVE_AT_TOMBSTONE_VERSION: Decision.AHEAD,
    Verdict.DELETED_AT_SOURCE: Decision.DELETE,
    Verdict.BEHIND: Decision.REINDEX,
    Verdict.RECREATED: Decision.REINDEX,
    Verdict.TOMBSTONE_AT_LIVE_VERSION: Decision.AHEAD,
}
# The reason a decision gives, where it is not the verdict's own name.
_REASONS: dict[Verdict, str] = {
    Verdict.ABSENT: "unknown",
    Verdict.DELETED_AT_SOURCE: "tombstoned_at_source",
}


def decide(
    document_id: str, entry: SourceEntry | None, indexed: IndexedDocument | None,
    source_name: str | None = None,
) -> PlannedAction:
    src_v = entry.version if entry is not None else None
    idx_v = indexed.version if indexed is not None else None
    found = verdict(document_id, entry, indexed, source=source_name)

    def act(decision: Decision, reason: str) -> PlannedAction:
        return PlannedAction(document_id, decision, reason, src_v, idx_v)

    if found is Verdict.CURRENT and indexed is not None:
        return _checked(indexed, act, Decision.UP_TO_DATE, "current", "chunk_count")
    if found is Verdict.DELETED and indexed is not None:
        return _checked(indexed, act, Decision.UP_TO_DATE, "deleted", "chunks_of_deleted")
    decision = _ACTIONS.get(found)
    if decision is None:  # refused: never asked for here (no refused versions given)
        raise ValueError(f"no reconcile action for {document_id!r}: {found.value}")
    return act(decision, _REASONS.get(found, found.value))


def _checked(
    indexed: IndexedDocument, act: Callable[[Decision, str], PlannedAction],
    decision: Decision, reason: str, repair: str,
) -> PlannedAction:
    """``decision`` when the chunks present agree with the state, else a repair."""
    if indexed.chunks_agree:
        return act(decision, reason)
    return act(Decision.REPAIR, repair)


def plan(
    listing: Mapping[str, SourceEntry], index: Mapping[str, IndexedDocument],
    source_name: str | None = None,
) -> Iterator[PlannedAction]:
    """One action per document known to either side (sorted for stable reports).

    ``source_name``: the listing's source; None compares every document with it.
    """
    for document_id in sorted(listing.keys() | index.keys()):
        yield decide(document_id, listing.get(document_id), index.get(document_id), source_name)
