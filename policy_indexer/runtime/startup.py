"""Waiting for a process's dependencies at start, alive and not ready, instead of exiting.

Under an orchestrator a process whose broker or cluster is still starting (or
away for maintenance) must not crash-loop: it serves ``/healthz`` (alive) and
``/readyz`` (503 ``starting`` with the reason) and tries again with capped
exponential backoff until the dependencies answer or it is asked to stop.
Every failure is retried, not only the transient ones: at start a refused
password or an untrusted CA is as likely to be mended outside the process (a
secret rotated, a mount fixed) as an unreachable broker, and the reason is in
the log and in ``/readyz`` meanwhile.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import structlog

from consumers.retry import RetryPolicy

log = structlog.get_logger(__name__)
T = TypeVar("T")


class StartingState(Protocol):
    """Where the tries are reported (``consumers.retry.HealthState`` or ``StartupStatus``)."""

    attempts: int
    last_error: str | None


@dataclass
class StartupStatus:
    """The health of a process that is not a worker: ``starting`` until its dependencies answer."""

    starting: bool = True
    attempts: int = 0
    last_error: str | None = None

    def health(self) -> dict[str, Any]:
        return {"status": "starting" if self.starting else "ok",
                "attempts": self.attempts, "last_error": self.last_error}


def until_ready(
    open_ready: Callable[[], T],
    *,
    what: str,
    state: StartingState,
    stop: threading.Event,
    policy: RetryPolicy,
) -> T | None:
    """``open_ready()``'s result once it succeeds; ``None`` when ``stop`` is set first.

    ``open_ready`` closes what it opened before it raises.
    """
    delay = policy.initial_s
    attempt = 0
    while not stop.is_set():
        attempt += 1
        try:
            ready = open_ready()
        except Exception as exc:  # every start-up failure waits and retries
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            state.attempts, state.last_error = attempt, reason
            log.warning(f"{what} not ready, retrying", attempt=attempt,
                        wait_s=round(delay, 2), error=reason)
            stop.wait(delay)
            delay = min(delay * 2, policy.max_s)
            continue
        state.attempts, state.last_error = 0, None
        return ready
    return None
