"""When to commit offsets: after enough records or enough time, whichever first.

Offsets are also committed on partition revocation and on shutdown (the worker
does that regardless of this policy).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

# The defaults, here once (the worker settings take them).
COMMIT_EVERY_RECORDS = 200
COMMIT_EVERY_SECONDS = 1.0


@dataclass
class CommitPolicy:
    max_records: int = COMMIT_EVERY_RECORDS
    max_interval_s: float = COMMIT_EVERY_SECONDS
    clock: Callable[[], float] = time.monotonic
    _since: int = field(default=0, init=False)
    _last: float | None = field(default=None, init=False)

    def record_done(self, count: int = 1) -> None:
        self._since += count

    def should_commit(self) -> bool:
        if self._since == 0:
            return False
        if self._last is None:
            self._last = self.clock()
        return self._since >= self.max_records or self.clock() - self._last >= self.max_interval_s

    def committed(self) -> None:
        self._since = 0
        self._last = self.clock()
