"""When a caught-up worker makes its writes searchable at once, instead of at the index's
next periodic refresh.

Elasticsearch shows a write to searches at its next refresh (every second by default),
so a change that took 0.2 s to index could wait up to another second before a search
sees it. A worker whose poll came back short of a full batch has caught up with its
partitions: traffic is light, and an explicit refresh of the chunk and state indices is
cheap. A worker working through a backlog (full batches) leaves refreshing to the
index, so bulk throughput is unchanged. Refreshes are at most one per
``min_interval_s`` per worker. On the embedded store a refresh is a no-op (every
committed write is visible at once).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

# The default, here once (the worker settings take it).
REFRESH_CAUGHT_UP_SECONDS = 0.2


@dataclass
class VisibilityPolicy:
    """``min_interval_s`` None: never refresh, leave it to the index."""

    min_interval_s: float | None = REFRESH_CAUGHT_UP_SECONDS
    clock: Callable[[], float] = time.monotonic
    _last: float | None = field(default=None, init=False)

    def due(self, batch_size: int, max_records: int) -> bool:
        """Refresh after this batch? Only a short batch (caught up), and not too often."""
        if self.min_interval_s is None or batch_size == 0 or batch_size >= max_records:
            return False
        return self._last is None or self.clock() - self._last >= self.min_interval_s

    def refreshed(self) -> None:
        self._last = self.clock()

    def disable(self) -> None:
        self.min_interval_s = None
