"""Who may be told ``no_access``, and how often: a token bucket per API key.

``no_access`` ("a document you cannot see is about this") is off for every key
unless its credentials say ``"no_access": true`` (``retrieval.credentials``).
Even then it is a probe of what the caller may not read, so each key gets a
bucket of ``no_access_per_minute`` decisions that refills at that rate; once it
is empty the answer is ``no_document``, as for a key without the flag. A
decision is only spent when the caller's own search found nothing (the
service asks ``NoAccessGate.permits`` then, never for an answered search).

One gate per process, shared by ``POST /search`` and the MCP tool, so a key
gets one budget whichever interface it uses. The clock is monotonic and
injectable (tests).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from retrieval.credentials import Caller

Clock = Callable[[], float]


@dataclass
class TokenBucket:
    """``capacity`` tokens, refilled at ``per_second``; ``take()`` spends one if there is one."""

    capacity: float
    per_second: float
    tokens: float
    updated: float

    def take(self, now: float) -> bool:
        elapsed = max(0.0, now - self.updated)
        self.tokens = min(self.capacity, self.tokens + elapsed * self.per_second)
        self.updated = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class NoAccessGate:
    """``permits(caller)``: may this caller be told ``no_access`` now? Spends a token if so."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def permits(self, caller: Caller) -> bool:
        rate = caller.no_access_per_minute
        if rate is None:
            return False
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get(caller.key_id)
            if bucket is None or bucket.per_second != rate / 60.0:  # a new key or rate
                capacity = max(1.0, rate)
                bucket = TokenBucket(capacity, rate / 60.0, capacity, now)
                self._buckets[caller.key_id] = bucket
            return bucket.take(now)
