"""Is Kafka within reach? Told by the consumer group's own heartbeat.

kafka-python's ``poll()`` does not raise while the brokers are away: it returns
nothing, exactly as when the topic is quiet, and keeps reconnecting by itself.
What does change is the group heartbeat: a member sends one every
``heartbeat_interval_ms`` while it reaches the group coordinator, and none while
it does not. ``CoordinatorWatch`` reads the seconds since the last one from the
consumer's metrics (``consumer-coordinator-metrics`` /
``last-heartbeat-seconds-ago``) and calls Kafka away once that exceeds the
session timeout, the point where the group itself would drop the member. Before
the first heartbeat it counts from its own start, so joining the group is not an
outage but a broker that is down at start-up is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

GROUP = "consumer-coordinator-metrics"
METRIC = "last-heartbeat-seconds-ago"


@dataclass
class CoordinatorWatch:
    consumer: Any  # a KafkaConsumer (anything with kafka-python's ``metrics()``)
    limit_s: float
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.started = self.started or self.clock()

    def silence_s(self) -> float | None:
        """Seconds without a heartbeat; None when the consumer does not say."""
        metrics = self.consumer.metrics() or {}
        value = metrics.get(GROUP, {}).get(METRIC)
        if value is None:
            return None
        return min(float(value), self.clock() - self.started)

    def away(self) -> str | None:
        """Why Kafka counts as out of reach now, or None when it is within reach."""
        silence = self.silence_s()
        if silence is None or silence <= self.limit_s:
            return None
        return (f"Kafka: no heartbeat to the group coordinator for {silence:.0f} s "
                f"(session timeout {self.limit_s:g} s)")
