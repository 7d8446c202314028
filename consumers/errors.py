"""Errors of the worker.

::

    WorkerError
    ├── TransientError       the world is down for now: back off, retry, do not commit
    │                        (store.errors.TransientStoreError is retried the same way)
    └── Interrupted          shutdown asked for while waiting: stop without committing

A poison event (one no retry can fix) is the core's ``indexing.errors.PoisonEvent``.
"""

from __future__ import annotations


class WorkerError(Exception):
    """Base of the worker's own errors."""


class TransientError(WorkerError):
    """Kafka (or another dependency) is unreachable for now."""


class Interrupted(WorkerError):
    """The worker was asked to stop while it was waiting to retry."""
