"""The source against the index, one document at a time: the one comparison, the one owner rule.

Four readers ask the same question of each document, "what does the source hold,
what does the index hold, and what does that make it?": the freshness monitor
(``metrics.freshness``), ``status`` (``policy_indexer.status_report``), the
passage freshness of the search (``policy_indexer.runtime.freshness``) and the
reconcile's plan (``reindex.plan``). ``verdict`` answers it once; each reader then
says the answer its own way (a lag from ``metrics.lag``, a status line, a planned
action).

==========================  ==========================  ===========================
source lists                index holds                 verdict
==========================  ==========================  ===========================
anything                    another source's document   ``other_owner``
unreadable (a bad file)     anything                    ``unreadable``
live v, refused at v        nothing, or anything < v    ``refused``
live v                      nothing                     ``missing``
live v                      live < v                    ``behind``
live v                      tombstone < v               ``recreated``
live v                      live v                      ``current``
live v                      tombstone v                 ``tombstone_at_live_version``
live v or tombstone v       any version above v         ``index_newer``
tombstone v                 nothing                     ``never_indexed``
tombstone v                 live < v                    ``deleted_at_source``
tombstone v                 live v                      ``live_at_tombstone_version``
tombstone v, or nothing     tombstone <= v              ``deleted``
nothing                     live                        ``gone_from_source``
nothing                     nothing                     ``absent``
==========================  ==========================  ===========================

The rows are tried top to bottom: the owner first (a document is compared only
with its own source), then an unreadable entry (no version to compare), then a
version the worker refused for its content (``refused``: (document id, version)
pairs; it waits for an edit, not for the pipeline), then the versions.

One owner per document (``owned_elsewhere``): a state that names a source other
than the one asked belongs to that source. A state without an owner (written
before owners existed, or a tombstone, which frees the id) and any state when no
source is named are compared with whichever source is asked.

Both sides are structural (``SourceSide``, ``IndexSide``): ``sources.base.SourceEntry``
on the one, ``store.model.DocumentState`` or the reconcile's ``IndexedDocument`` on
the other, so this module imports neither and sits below both.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, Protocol, TypeVar


class _Versioned(Protocol):
    @property
    def version(self) -> int: ...
    @property
    def deleted(self) -> bool: ...


class SourceSide(_Versioned, Protocol):
    """What the source lists of a document (``sources.base.SourceEntry``)."""

    @property
    def document_id(self) -> str: ...
    @property
    def unreadable(self) -> object | None: ...


class IndexSide(_Versioned, Protocol):
    """What the index holds of a document (``store.model.DocumentState`` and the like)."""

    @property
    def owner(self) -> str | None: ...


E = TypeVar("E", bound=SourceSide)
S = TypeVar("S", bound=IndexSide)


def owned_elsewhere(owner: str | None, source: str | None) -> bool:
    """Does a document whose state names ``owner`` belong to another source than ``source``?

    None on either side says nothing: an unowned document (and any, when no source
    is named) is compared with, and may be written by, whichever source is asked.
    """
    return source is not None and owner is not None and owner != source


class Verdict(StrEnum):
    OTHER_OWNER = "other_owner"
    UNREADABLE = "unreadable"
    REFUSED = "refused"
    MISSING = "missing"
    BEHIND = "behind"
    RECREATED = "recreated"
    CURRENT = "current"
    TOMBSTONE_AT_LIVE_VERSION = "tombstone_at_live_version"
    INDEX_NEWER = "index_newer"
    NEVER_INDEXED = "never_indexed"
    DELETED_AT_SOURCE = "deleted_at_source"
    LIVE_AT_TOMBSTONE_VERSION = "live_at_tombstone_version"
    DELETED = "deleted"
    GONE_FROM_SOURCE = "gone_from_source"
    ABSENT = "absent"


def verdict(
    document_id: str,
    entry: SourceSide | None,
    state: IndexSide | None,
    *,
    source: str | None = None,
    refused: Collection[tuple[str, int]] = (),
) -> Verdict:
    """The verdict for one document (the table above). ``source``: the listing's source.

    A side without a whole-number version (a state or a readable entry whose version
    is None, a string, ...) is refused with ``ValueError``: any verdict would be a guess.
    """
    if state is not None:
        _check_version(document_id, "the index's state", state.version)
    if entry is not None and entry.unreadable is None:
        _check_version(document_id, "the source's entry", entry.version)
    if state is not None and owned_elsewhere(state.owner, source):
        return Verdict.OTHER_OWNER
    if entry is not None and entry.unreadable is not None:
        return Verdict.UNREADABLE
    if entry is None:
        if state is None:
            return Verdict.ABSENT
        return Verdict.DELETED if state.deleted else Verdict.GONE_FROM_SOURCE
    if (not entry.deleted and (state is None or state.version < entry.version)
            and (document_id, entry.version) in refused):
        return Verdict.REFUSED
    if state is None:
        return Verdict.NEVER_INDEXED if entry.deleted else Verdict.MISSING
    if state.version > entry.version:
        return Verdict.INDEX_NEWER
    if entry.deleted:
        if state.deleted:
            return Verdict.DELETED
        if state.version == entry.version:
            return Verdict.LIVE_AT_TOMBSTONE_VERSION
        return Verdict.DELETED_AT_SOURCE
    if state.version < entry.version:
        return Verdict.RECREATED if state.deleted else Verdict.BEHIND
    return Verdict.TOMBSTONE_AT_LIVE_VERSION if state.deleted else Verdict.CURRENT


def _check_version(document_id: str, side: str, version: object) -> None:
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"document {document_id!r}: {side} has no version ({version!r})")


@dataclass(frozen=True, slots=True)
class Comparison(Generic[E, S]):
    """One document's verdict, with the two sides it was made from (None: that side lacks it)."""

    document_id: str
    verdict: Verdict
    entry: E | None
    state: S | None


def compare(
    listing: Iterable[E],
    index: Mapping[str, S],
    *,
    source: str | None = None,
    refused: Collection[tuple[str, int]] = (),
) -> Iterator[Comparison[E, S]]:
    """Every document either side holds, once: the listed ones in the listing's order,
    then the index's unlisted ones in the index's order.

    An id listed twice is one document: its last entry counts, at its first place.
    """
    entries: dict[str, E] = {}
    for entry in listing:
        entries[entry.document_id] = entry
    for document_id, entry in entries.items():
        state = index.get(document_id)
        found = verdict(document_id, entry, state, source=source, refused=refused)
        yield Comparison(document_id, found, entry, state)
    for document_id, state in index.items():
        if document_id not in entries:
            found = verdict(document_id, None, state, source=source, refused=refused)
            yield Comparison(document_id, found, None, state)
