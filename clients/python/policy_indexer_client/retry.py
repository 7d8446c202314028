"""When to send a request again: on 503 and 429, after the ``Retry-After`` the server asks
for, and on a connection that could not be opened; never more than ``attempts`` tries.

A short loop in the client rather than tenacity: the one rule (honour a
``Retry-After`` of seconds or an HTTP date, else back off, give up when the server
asks for longer than ``max_wait_s``) fits in this module, and the client keeps its
two dependencies. A timeout is not retried: the search may still be running, and a
second one would double the load that made it slow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

RETRIED_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts``: tries in all, the first included (1: never retry).
    ``backoff_s``: the wait without ``Retry-After``, doubled each time.
    ``max_wait_s``: a longer ``Retry-After`` is not waited for (the error says so)."""

    attempts: int = 3
    backoff_s: float = 0.5
    max_wait_s: float = 30.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts={self.attempts}: at least 1")
        if self.backoff_s < 0 or self.max_wait_s < 0:
            raise ValueError(f"RetryPolicy: backoff_s={self.backoff_s} and "
                             f"max_wait_s={self.max_wait_s} must not be negative")

    def delay(self, attempt: int, response: httpx.Response | None) -> float | None:
        """Seconds to wait before try ``attempt + 1``, or None: do not try again.

        ``response`` is None when the connection could not be opened.
        """
        if attempt >= self.attempts:
            return None
        if response is not None and response.status_code not in RETRIED_STATUSES:
            return None
        asked = retry_after(response) if response is not None else None
        if asked is None:
            return min(self.backoff_s * 2.0 ** (attempt - 1), self.max_wait_s)
        return asked if asked <= self.max_wait_s else None


def retry_after(response: httpx.Response, now: datetime | None = None) -> float | None:
    """The response's ``Retry-After`` in seconds (delta-seconds or an HTTP date), or None."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
