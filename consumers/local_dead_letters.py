"""Dead letters of the embedded mode: a table beside the local queue, same fields as Kafka's."""

from __future__ import annotations

import time

from consumers.dead_letter import DeadLetter
from consumers.errors import TransientError
from transport.local_queue import LocalQueue, QueueError, StoredDeadLetter


class LocalDeadLetterSink:
    def __init__(self, queue: LocalQueue, topic: str) -> None:
        self.queue = queue
        self.topic = topic

    def send(self, letter: DeadLetter) -> None:
        stored = StoredDeadLetter(
            letter.key, letter.value, letter.reason, letter.error, letter.topic,
            letter.partition, letter.offset, time.time(),
        )
        try:
            self.queue.add_dead_letter(self.topic, stored)
        except QueueError as exc:
            raise TransientError(str(exc)) from exc
