"""A folder that cannot be listed: the documents under it are kept as they are.

A source may list, instead of the documents of a folder it cannot list, one
entry for the folder itself: ``unreadable`` of kind ``unlistable``, its
``document_id`` the folder's path with a trailing ``/`` (``lib/private/``; no
document id ends with ``/``). What the folder holds is unknown, so no document
under it may look deleted. ``with_unlisted`` gives every consumer that compares
a listing with the index (the monitor, ``status``, the reconcile) the same
view: each indexed document under such a folder that the listing does not name
is listed as unreadable (``unlistable``, with the folder's reason), which each
of them already leaves alone (its own status, no lag, never deleted).

A document ``lib/private`` (the folder's ``index.md``) is covered too: an
``lib/private.md`` beside the folder is listed normally when it exists.
"""

from __future__ import annotations

from collections.abc import Iterable

from sources.base import SourceEntry, Unreadable, UnreadableKind


def unlisted_folders(listing: Iterable[SourceEntry]) -> dict[str, SourceEntry]:
    """The entries that stand for a folder that cannot be listed, by their ``path/``."""
    return {
        e.document_id: e for e in listing
        if e.unreadable is not None and e.unreadable.kind is UnreadableKind.UNLISTABLE
        and e.document_id.endswith("/")
    }


def covering(document_id: str, folders: Iterable[str]) -> str | None:
    """The unlisted folder (``path/``) ``document_id`` may lie in, or None."""
    for folder in folders:
        if document_id.startswith(folder) or f"{document_id}/" == folder:
            return folder
    return None


def with_unlisted(listing: Iterable[SourceEntry], indexed: Iterable[str]) -> list[SourceEntry]:
    """``listing``, plus an ``unlistable`` entry per ``indexed`` id under an unlisted folder.

    Ids the listing names keep their entry; without unlisted folders the listing
    is returned as it is (as a list).
    """
    entries = list(listing)
    folders = unlisted_folders(entries)
    if not folders:
        return entries
    listed = {e.document_id for e in entries}
    for document_id in sorted(set(indexed) - listed):
        folder = covering(document_id, folders)
        if folder is None:
            continue
        marker = folders[folder]
        reason = marker.unreadable
        detail = reason.detail if reason is not None else folder
        entries.append(SourceEntry(
            document_id, 0, marker.changed_at,
            unreadable=Unreadable(UnreadableKind.UNLISTABLE,
                                  f"under {folder!r}, which cannot be listed: {detail}"),
        ))
    return entries
