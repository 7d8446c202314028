"""Who owns a document id, asked before a webhook's event is published (one owner per document).

The indexer's guard (``indexing.rules.owner_refusal``) is what keeps a document with its
owner: an event from another source is dead-lettered ``owner``. This check only answers
the sender early, 409 instead of 202-then-dead-letter, for an id that

1. the index's state gives to another source (``DocumentState.owner``), or
2. the configured folder holds (a file for the id, readable or not): the folder owns it
   even before its first indexing.

The rule is the indexer's (``foundation.comparison.owned_elsewhere``); an event without a
source is not checked. A lookup that fails (the index unreachable) lets the event
through: the guard still refuses it, and a webhook must not stop taking changes because
the index is down.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import structlog

from events.model import ChangeEvent
from foundation.comparison import owned_elsewhere
from sources.errors import SourceError
from store.errors import StoreError
from store.model import DocumentState

log = structlog.get_logger(__name__)


class StateReader(Protocol):
    """The part of ``store.base.Store`` the check reads."""

    def get_state(self, document_id: str) -> DocumentState | None: ...


class OwnerLookup(Protocol):
    def __call__(self, document_id: str) -> str | None:
        """The source that owns ``document_id``, or None (unowned, unknown, or not found)."""


@dataclass(frozen=True)
class IndexAndFolderOwners:
    """``OwnerLookup`` over the index's states and, optionally, the configured folder.

    ``folder_holds``: does the folder have a file for the id (``MarkdownFolderSource.holds``);
    ``folder_name``: the name its events carry (``folder``).
    """

    states: StateReader
    folder_holds: Callable[[str], bool] | None = None
    folder_name: str = "folder"

    def __call__(self, document_id: str) -> str | None:
        state = self.states.get_state(document_id)
        if state is not None and state.owner is not None:
            return state.owner
        if self.folder_holds is not None and self.folder_holds(document_id):
            return self.folder_name
        return None


@dataclass(frozen=True)
class OwnerConflict:
    """An event for an id another source owns: what the 409 says."""

    document_id: str
    owner: str
    source: str

    def __str__(self) -> str:
        return (f"document {self.document_id!r} belongs to source {self.owner!r}, not "
                f"{self.source!r}: delete it at {self.owner!r} first to move it "
                "(docs/hardening.md, one owner per document)")


def conflict(lookup: OwnerLookup | None, event: ChangeEvent) -> OwnerConflict | None:
    """The conflict ``event`` would be refused for, or None to publish it (blocking: a read)."""
    if lookup is None or event.source is None:
        return None
    try:
        owner = lookup(event.document_id)
    except (StoreError, SourceError, OSError) as exc:
        log.warning("owner lookup failed; the indexer's guard decides",
                    document_id=event.document_id, error=str(exc))
        return None
    if owner is None or not owned_elsewhere(owner, event.source):
        return None
    return OwnerConflict(event.document_id, owner, event.source)
