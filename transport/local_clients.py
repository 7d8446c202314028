"""Publisher and consumer on the local queue (``transport.local_queue``).

They implement the interfaces the Kafka path uses: ``transport.publisher.EventPublisher``
and ``transport.consumer.EventConsumer``. The dead-letter sink on the same file is
``consumers.local_dead_letters.LocalDeadLetterSink``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from events.model import ChangeEvent
from transport.consumer import Delivery
from transport.local_queue import LocalQueue, QueueError
from transport.publisher import PublishUnavailable


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
    """The topic's one consumer while it lives (it holds the lease)."""

    def __init__(self, queue: LocalQueue, topic: str, *, lease_ttl_s: float = 15.0) -> None:
        self.queue = queue
        self.topic = topic
        self.lease_ttl_s = lease_ttl_s
        self._cursor = 0  # highest offset handed out; restarts at 0: redelivery
        self._renewed = 0.0
        self._renew()

    def _renew(self) -> None:
        now = time.monotonic()
        if now - self._renewed >= self.lease_ttl_s / 3:
            self.queue.take_lease(self.topic, self.lease_ttl_s)
            self._renewed = now

    def poll(self, max_records: int, timeout_s: float) -> list[Delivery]:
        deadline = time.monotonic() + timeout_s
        while True:
            self._renew()
            records = self.queue.read(self.topic, self._cursor, max_records)
            if records:
                self._cursor = records[-1].offset
                return records
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            # Wakes at once on a publish from this process; re-reads every 50 ms
            # for publishes from other processes.
            self.queue.wait_for_records(min(remaining, 0.05))

    def commit(self, deliveries: Sequence[Delivery]) -> None:
        if deliveries:
            self.queue.ack(self.topic, max(d.offset for d in deliveries))

    def close(self) -> None:
        self.queue.release_lease(self.topic)
