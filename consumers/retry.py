"""Retry transient failures with capped exponential backoff and jitter (tenacity).

Forever by default: a worker that cannot reach Elasticsearch waits for it, and
commits nothing meanwhile. ``sleep`` is injected so that the worker can
keep its group membership while it waits, and stop early on shutdown (by
raising ``Interrupted``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import structlog
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_never,
    wait_exponential_jitter,
)

from consumers.errors import TransientError
from store.errors import StoreAccessError, StoreError, TransientStoreError

log = structlog.get_logger(__name__)
T = TypeVar("T")
# Retried with backoff, never dead-lettered. StoreAccessError (credentials refused, TLS not
# verified) is configuration, not a passing fault, but no event is to blame for it: it waits
# here, /readyz says why (503, last_error) and the log repeats the line; a privilege granted
# or a certificate fixed mends it in place, a changed secret needs a restart.
TRANSIENT: tuple[type[BaseException], ...] = (TransientStoreError, TransientError,
                                              StoreAccessError)


# The defaults, here once (the worker settings take them).
RETRY_INITIAL_SECONDS = 0.2
RETRY_MAX_SECONDS = 10.0


@dataclass(frozen=True)
class RetryPolicy:
    initial_s: float = RETRY_INITIAL_SECONDS
    max_s: float = RETRY_MAX_SECONDS
    jitter_s: float = 0.5
    max_attempts: int | None = None  # None: forever


@dataclass
class HealthState:
    """What /healthz reports: whether the worker is backing off, since when, and why."""

    retrying: bool = False
    attempts: int = 0
    last_error: str | None = None
    stopping: bool = False
    kafka_unreachable: str | None = None  # why the transport counts as away (Kafka's only)
    starting: bool = False  # still connecting to its dependencies (not ready, alive)
    # What the backoff waits for: "store" (unreachable, disk full, blocked, locked) or
    # "transport" (Kafka, the dead-letter sink); None while not retrying.
    waiting_for: str | None = None
    # time.monotonic() of the worker loop's last turn (None before the first): liveness
    # fails when it is too old (a stuck loop), see policy_indexer.runtime.probes.
    heartbeat: float | None = None


def call_with_retry(
    fn: Callable[[], T],
    *,
    policy: RetryPolicy,
    health: HealthState,
    sleep: Callable[[float], None],
    on_retry: Callable[[BaseException], None] = lambda _exc: None,
) -> T:
    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        health.retrying = True
        health.attempts = state.attempt_number
        health.last_error = f"{type(exc).__name__}: {exc}" if exc else None
        health.waiting_for = "store" if isinstance(exc, StoreError) else "transport"
        if exc is not None:
            on_retry(exc)
        log.warning(
            "transient failure, retrying",
            attempt=state.attempt_number,
            wait_s=round(state.upcoming_sleep, 2),
            error=health.last_error,
        )

    retrying = Retrying(
        retry=retry_if_exception_type(TRANSIENT),
        wait=wait_exponential_jitter(
            multiplier=policy.initial_s, max=policy.max_s, jitter=policy.jitter_s
        ),
        stop=stop_never if policy.max_attempts is None else stop_after_attempt(policy.max_attempts),
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    try:
        return retrying(fn)
    finally:
        health.retrying = False
        health.attempts = 0
        health.waiting_for = None
