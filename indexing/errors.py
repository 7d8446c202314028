"""Errors of the indexing core.

::

    IndexingError
    └── PoisonEvent     this event can never be applied (bad chunking, a document the
                        store refuses): the edge dead-letters it or records it, and goes on

Transient failures are not translated here: a ``store.errors.TransientStoreError``
passes through, so the edge that drives the core (a worker loop, the reindex)
decides how to back off.
"""

from __future__ import annotations

# Poison reasons that are the document's content, not a bug nor another owner: the
# version waits for an edit at the source (a rerun cannot fix it). The reconcile records
# them as refused; status and the monitors show the document ``refused``, not lagging.
CONTENT_REASONS = frozenset({"chunker", "limits", "schema"})


class IndexingError(Exception):
    """Base of the indexing core's own errors."""


class PoisonEvent(IndexingError):
    """An event that no retry can fix; ``reason`` is a short machine-readable kind."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
