"""Errors of the store.

::

    StoreError
    ├── TransientStoreError   unreachable, timeout, 429, 5xx: retry, the data is fine
    │   └── StoreUnavailableError  up but cannot write for now: disk full, I/O error, locked,
    │                              cannot open the file; an index blocked (flood stage)
    ├── RejectedDocumentError the store refuses this document (mapping, size): poison
    ├── StoreSetupError       the index template, indices or alias cannot be made
    └── StoreAccessError      credentials refused (401/403) or TLS not verified: configuration

``StoreAccessError`` is not transient: the settings (and the secrets read from
files) are read once at the start of a process, so asking again with the same
ones cannot succeed. Commands print its one line and exit non-zero; the worker
lets it end the process (exit 1, the line in the log) instead of retrying
forever or dead-lettering every event, and the orchestrator restarts it with
the secret it mounts then.
"""

from __future__ import annotations


class StoreError(Exception):
    """Base of every error raised by a store; ``status`` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class TransientStoreError(StoreError):
    """The store could not be reached or asked us to slow down; try again later."""


class StoreUnavailableError(TransientStoreError):
    """The store cannot take this request for now, whatever the event: its disk is full, an
    I/O error, the database locked beyond its busy timeout or its file cannot be opened
    (SQLite); an index blocked by the flood-stage watermark or an operator's block
    (Elasticsearch). Retried with backoff while it lasts, never dead-lettered."""


class RejectedDocumentError(StoreError):
    """The store refused a document for what it contains; retrying will not help."""

    def __init__(self, message: str, *, item_ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.item_ids = item_ids


class StoreSetupError(StoreError):
    """The store's indices, template or alias are missing or cannot be created."""


class StoreAccessError(StoreError):
    """The store refused our credentials, or its TLS certificate could not be verified.

    A configuration error: the message names the node and the setting to fix,
    and never the secret itself.
    """
