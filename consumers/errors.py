"""Errors of the worker.

::

    WorkerError
    ├── PoisonEvent          this event can never be processed: dead-letter it, go on
    ├── TransientError       the world is down for now: back off, retry, do not commit
    │                        (store.errors.TransientStoreError is retried the same way)
    └── Interrupted          shutdown asked for while waiting: stop without committing
"""

from __future__ import annotations


class WorkerError(Exception):
    """Base of the worker's own errors."""


class PoisonEvent(WorkerError):
    """An event that no retry can fix; ``reason`` is a short machine-readable kind."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


class TransientError(WorkerError):
    """Kafka (or another dependency) is unreachable for now."""


class Interrupted(WorkerError):
    """The worker was asked to stop while it was waiting to retry."""
