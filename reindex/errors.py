"""Errors of the reindex (tree in ``reindex/__init__.py``)."""

from __future__ import annotations


class ReindexError(Exception):
    """Base of the reindex's own errors."""


class ListingFailedError(ReindexError):
    """The source listing cannot be trusted as complete; nothing may be deleted."""


class RunInterrupted(ReindexError):
    """A stop was requested (SIGTERM, lease lost); the next run finishes the work."""


class LeaseError(ReindexError):
    """The lease backend failed (unreachable, bad data); no job may run without a lease."""
