"""Errors of the store.

::

    StoreError
    ├── TransientStoreError   unreachable, timeout, 429, 5xx: retry, the data is fine
    ├── RejectedDocumentError the store refuses this document (mapping, size): poison
    └── StoreSetupError       the index template, indices or alias cannot be made
"""

from __future__ import annotations


class StoreError(Exception):
    """Base of every error raised by a store; ``status`` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class TransientStoreError(StoreError):
    """The store could not be reached or asked us to slow down; try again later."""


class RejectedDocumentError(StoreError):
    """The store refused a document for what it contains; retrying will not help."""

    def __init__(self, message: str, *, item_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.item_ids = item_ids


class StoreSetupError(StoreError):
    """The store's indices, template or alias are missing or cannot be created."""
