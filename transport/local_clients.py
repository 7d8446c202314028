"""Publisher and consumer on the local queue (``transport.local_queue``).

They implement the interfaces the Kafka path uses: ``transport.publisher.EventPublisher``
and ``transport.consumer.EventConsumer``. The dead-letter sink on the same file is
``consumers.local_dead_letters.LocalDeadLetterSink``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence

from events.model import ChangeEvent
from transport.consumer import Delivery, Partition, Rebalance, ignore_rebalance
from transport.local_queue import LocalQueue, QueueError
from transport.publisher import PublishUnavailable

# A silent consumer loses the queue after this long; here once (the embedded settings
# take it).
LEASE_TTL_SECONDS = 15.0


class LocalQueuePublisher:
    def __init__(self, queue: LocalQueue, topic: str) -> None:
        self.queue = queue
        self.topic = topic

    def publish(self, event: ChangeEvent) -> None:
        self.publish_many([event])

    def publish_many(self, events: Iterable[ChangeEvent]) -> int:
        """Store the events in one transaction (replays); returns how many."""
        records = [(e.document_id.encode("utf-8"), e.to_json_bytes()) for e in events]
        try:
            self.queue.append(self.topic, records)
        except QueueError as exc:
            raise PublishUnavailable(str(exc)) from exc
        return len(records)

    def ready(self) -> bool:
        try:
            self.queue.pending(self.topic)
        except QueueError:
            return False
        return True

    def close(self) -> None:
        return None  # the queue belongs to whoever opened it


class LocalQueueConsumer:
    """The topic's one consumer while it lives (it holds the lease).

    The topic has one partition and one consumer, so its assignment is that
    partition from ``subscribe`` to ``close`` and no revocation ever happens;
    there is no coordinator to lose (``unreachable`` is always None) and the
    backlog is not tracked per record (None).
    """

    name = "queue"

    def __init__(self, queue: LocalQueue, topic: str, *,
                 lease_ttl_s: float = LEASE_TTL_SECONDS) -> None:
        self.queue = queue
        self.topic = topic
        self.lease_ttl_s = lease_ttl_s
        self._partition = Partition(topic, 0)
        self._cursor = 0  # highest offset handed out; restarts at 0: redelivery
        self._renewed = 0.0
        self._subscribed = False
        self._on_assign: Rebalance = ignore_rebalance
        self._assigned: frozenset[Partition] = frozenset()
        self._paused = False
        self._woken = threading.Event()
        self._renew()

    def _renew(self) -> None:
        now = time.monotonic()
        if now - self._renewed >= self.lease_ttl_s / 3:
            self.queue.take_lease(self.topic, self.lease_ttl_s)
            self._renewed = now

    def subscribe(
        self, on_assign: Rebalance = ignore_rebalance, on_revoke: Rebalance = ignore_rebalance,
    ) -> None:
        self._subscribed = True
        self._on_assign = on_assign

    def poll(self, max_records: int, timeout_s: float) -> list[Delivery]:
        if not self._subscribed:
            raise RuntimeError(f"poll before subscribe on topic={self.topic!r}")
        if not self._assigned:
            self._assigned = frozenset({self._partition})
            self._on_assign(self._assigned)
        deadline = time.monotonic() + timeout_s
        while True:
            self._renew()
            records = [] if self._paused else self.queue.read(self.topic, self._cursor,
                                                             max_records)
            if records:
                self._cursor = records[-1].offset
                return records
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._woken.is_set():
                self._woken.clear()
                return []
            # Wakes at once on a publish from this process; re-reads every 50 ms
            # for publishes from other processes.
            self.queue.wait_for_records(min(remaining, 0.05))

    def wakeup(self) -> None:
        """The poll under way, or the next one, returns at once (with what is there, or
        nothing): a worker asked to stop does not wait out its poll's timeout."""
        self._woken.set()
        self.queue.wake()

    def assignment(self) -> frozenset[Partition]:
        return self._assigned

    def pause(self, partitions: Iterable[Partition]) -> None:
        if self._partition in set(partitions):
            self._paused = True

    def resume(self, partitions: Iterable[Partition]) -> None:
        if self._partition in set(partitions):
            self._paused = False

    def commit(self, deliveries: Sequence[Delivery]) -> None:
        if deliveries:
            self.queue.ack(self.topic, max(d.offset for d in deliveries))

    def backlog(self, delivery: Delivery) -> int | None:
        return None

    def unreachable(self) -> str | None:
        return None

    def close(self) -> None:
        self._assigned = frozenset()
        self.queue.release_lease(self.topic)
