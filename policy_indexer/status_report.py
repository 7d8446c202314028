"""The numbers behind ``policy-indexer status``: per-document freshness, leftovers, dead letters.

One pass over the source listing (when a source is configured), the index's
states and its chunks, with the monitor's own definitions: each document's
verdict from ``foundation.comparison.compare``, its lag from ``metrics.lag`` and
leftovers from ``deleter.sweep.classify``. It
is a single snapshot, so for a document that changed several times since the
index last caught up, lag counts from the latest change the listing shows (the
running monitor, which remembers earlier cycles, counts from the first).

A document the source lists but cannot read (a folder's file without
permission, not UTF-8, a FIFO, ...) is its own status, ``unreadable``, with the
reason (``sources.base.Unreadable``, naming the file) and no lag figure; it is
not counted as behind, and the rest of the report is complete.

A document whose version at the source the worker refused for its content (bad
front matter: ``valid_to: banana``, ``access_labels: [null]``; a dead letter for
that very version) is ``refused``, with the dead letter's reason and no lag: it
waits for an edit, not for the pipeline, so it is neither behind nor missing.

A document another source owns (one owner per document: its state names a source
other than the configured one) is ``other_owner``, with the owner in ``owner`` and no
lag: it is compared only with its own source, never ``deleted_at_source`` here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from deleter.sweep import classify
from foundation.comparison import Verdict, compare
from metrics.lag import LagStatus, verdict_lag
from sources.base import SourceEntry
from sources.unlisted import with_unlisted
from store.model import ChunkRef, DocumentState


@dataclass(frozen=True)
class DocumentStatus:
    document_id: str
    source_version: int | None  # None: no source configured, or the source lacks it
    indexed_version: int | None  # None: not in the index
    deleted_at_source: bool
    deleted_in_index: bool
    # current | behind | missing_from_index | deleted_at_source | unreadable | other_owner
    # | refused | unknown
    status: str
    lag_seconds: float | None  # None: unknown without a source, or unreadable at the source
    chunks: int
    reason: str | None = None  # unreadable: why ("permission: /lib/a.md: cannot open it: ...")
    owner: str | None = None  # the source the index says owns it; None: unowned


@dataclass
class StatusReport:
    mode: str
    index: str
    source: str | None
    taken_at: datetime
    documents: list[DocumentStatus] = field(default_factory=list)
    leftover_versions: int = 0
    dead_letters: int | None = None
    queued: int | None = None
    last_reindex: datetime | None = None

    @property
    def max_lag_seconds(self) -> float | None:
        if self.source is None:
            return None
        return max((d.lag_seconds or 0.0 for d in self.documents), default=0.0)

    @property
    def behind(self) -> int:
        return sum(d.status not in ("current", "unknown", "unreadable", "other_owner",
                                    "refused")
                   for d in self.documents)

    @property
    def unreadable(self) -> int:
        return sum(d.status == "unreadable" for d in self.documents)

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "index": self.index,
            "source": self.source,
            "taken_at": self.taken_at.isoformat(),
            "documents": [asdict(d) for d in self.documents],
            "max_lag_seconds": self.max_lag_seconds,
            "behind": self.behind,
            "unreadable": self.unreadable,
            "leftover_versions": self.leftover_versions,
            "dead_letters": self.dead_letters,
            "queued": self.queued,
            "last_reindex": self.last_reindex.isoformat() if self.last_reindex else None,
        }


def document_statuses(
    listing: Iterable[SourceEntry] | None,
    states: Iterable[DocumentState],
    chunks: Iterable[ChunkRef],
    *,
    now: datetime,
    grace: timedelta,
    source_name: str | None = None,
    refused: Mapping[tuple[str, int], str] | None = None,
) -> tuple[list[DocumentStatus], int]:
    """Every document live at the source or in the index, and the leftover count.

    Documents deleted on both sides (or, without a source, deleted in the index)
    are left out when no chunk of theirs remains: they are current and hold nothing.
    ``source_name``: the listing's source; another source's documents are ``other_owner``.
    ``refused``: (document id, version) to the dead letter's reason, for versions the
    worker refused; such a document at that version at the source is ``refused``.
    """
    indexed = {s.document_id: s for s in states}
    counts: Counter[str] = Counter()
    leftovers = 0
    for ref in chunks:
        counts[ref.document_id] += 1
        if classify(ref, indexed.get(ref.document_id), now, grace) not in (None, "grace"):
            leftovers += 1
    listed = with_unlisted(listing, indexed) if listing is not None else None  # kept, not gone
    compared = {c.document_id: c for c in compare(
        listed or (), indexed, source=source_name, refused=refused or {})}
    result: list[DocumentStatus] = []
    for doc in sorted(compared):
        found = compared[doc]
        state, entry = found.state, found.entry
        gone_at_source = listed is None or entry is None or entry.deleted
        if gone_at_source and (state is None or state.deleted) and not counts[doc]:
            continue
        reason = str(entry.unreadable) if entry is not None and entry.unreadable else None
        lag: float | None
        if listed is None:
            status, lag = "unknown", None
        elif found.verdict is Verdict.OTHER_OWNER and state is not None:
            status, lag = "other_owner", None
            reason = (f"owned by source {state.owner!r}, compared only with it, not with "
                      f"{source_name!r}")
        elif found.verdict is Verdict.REFUSED and entry is not None and refused is not None:
            status, lag, reason = "refused", None, refused[(doc, entry.version)]
        else:
            absent_since = now if entry is None else None
            measured = verdict_lag(doc, found.verdict, entry, absent_since=absent_since)
            status = measured.status.value if measured is not None else "current"
            lag = measured.seconds(now) if measured is not None else 0.0
            if measured is not None and measured.status is LagStatus.UNREADABLE:
                lag = None  # no version to compare: not 0, which would claim "current"
        result.append(DocumentStatus(
            document_id=doc,
            source_version=entry.version if entry is not None else None,
            indexed_version=state.version if state is not None else None,
            deleted_at_source=bool(entry is not None and entry.deleted),
            deleted_in_index=bool(state is not None and state.deleted),
            status=status,
            lag_seconds=lag,
            chunks=counts[doc],
            reason=reason,
            owner=state.owner if state is not None else None,
        ))
    return result, leftovers
