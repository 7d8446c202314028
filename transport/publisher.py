"""The interface every event transport implements for producers.

Errors::

    PublishError            the event is NOT known to be stored; the caller must not
    │                       report success (the webhook answers 503, the CMS retries)
    ├── PublishUnavailable  the queue could not take it in time (down, slow, overloaded)
    └── PublishRejected     the queue refused it (e.g. too large for the topic)

``publish`` is blocking on purpose: the worker's loop is synchronous, and the
webhook receiver runs it in a worker thread so the event loop never blocks.
"""

from __future__ import annotations

from typing import Protocol

from events.model import ChangeEvent


class PublishError(Exception):
    """The event was not acknowledged as durably stored."""


class PublishUnavailable(PublishError):
    """The queue did not acknowledge in time, or cannot be reached."""


class PublishRejected(PublishError):
    """The queue answered that it will not store this event."""


class EventPublisher(Protocol):
    """Hands change events to the queue, keyed by document id."""

    def publish(self, event: ChangeEvent) -> None:
        """Return only once the queue holds ``event`` durably; else raise ``PublishError``."""
        ...

    def ready(self) -> bool:
        """True when the queue can be reached now (a readiness probe; must not hang)."""
        ...

    def close(self) -> None:
        """Release connections; pending events are flushed or fail."""
        ...
