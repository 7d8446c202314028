"""Transport factories for the transport contract suite: the local queue and real Kafka.

Each yields a ``TransportUnderTest`` on a fresh, unique topic: a publisher, a way
to open a new consumer (the same consumer group each time, as a restarted worker
would), a dead-letter sink, and a way to read the dead letters back.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from consumers.dead_letter import DeadLetter, DeadLetterSink
from consumers.local_dead_letters import LocalDeadLetterSink
from consumers.transport import ensure_topics, make_consumer, make_producer
from consumers.worker import KafkaDeadLetterSink
from support.kafka_admin import delete_topics
from support.kafka_helpers import read_all
from transport.consumer import Delivery, EventConsumer
from transport.kafka_consumer import KafkaEventConsumer
from transport.kafka_producer import KafkaEventPublisher, KafkaPublisherConfig
from transport.local_clients import LocalQueueConsumer, LocalQueuePublisher
from transport.local_queue import LocalQueue
from transport.publisher import EventPublisher

# (key, value, reason, source offset) of each dead letter, in order.
LetterSummary = tuple[bytes | None, bytes | None, str, int]


@dataclass
class TransportUnderTest:
    publisher: EventPublisher
    new_consumer: Callable[[], EventConsumer]
    dead_letters: DeadLetterSink
    read_dead_letters: Callable[[int], list[LetterSummary]]
    first_poll_s: float  # how long a new consumer may take to get its first records
    quiet_s: float  # how long to wait before concluding that nothing more comes


def drain(consumer: EventConsumer, expect: int, timeout_s: float) -> list[Delivery]:
    """Poll until ``expect`` records came (or the time is up), then once more briefly."""
    got: list[Delivery] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < expect and time.monotonic() < deadline:
        got.extend(consumer.poll(100, 0.5))
    got.extend(consumer.poll(100, 0.3))
    return got


@contextlib.contextmanager
def local_transport(request: pytest.FixtureRequest) -> Iterator[TransportUnderTest]:
    tmp_path: Path = request.getfixturevalue("tmp_path")
    queue = LocalQueue(tmp_path / "queue.sqlite3")
    topic = "changes"

    def read_letters(_expect: int) -> list[LetterSummary]:
        return [(d.key, d.value, d.reason, d.source_offset) for d in queue.dead_letters(topic)]

    try:
        yield TransportUnderTest(
            LocalQueuePublisher(queue, topic), lambda: LocalQueueConsumer(queue, topic),
            LocalDeadLetterSink(queue, topic), read_letters, first_poll_s=2.0, quiet_s=0.5,
        )
    finally:
        queue.close()


@contextlib.contextmanager
def kafka_transport(request: pytest.FixtureRequest) -> Iterator[TransportUnderTest]:
    bootstrap: str = request.getfixturevalue("kafka_bootstrap")
    unique: str = request.getfixturevalue("unique")
    topic, dlq, group = f"{unique}-changes", f"{unique}-dlq", f"{unique}-group"
    ensure_topics(bootstrap, [topic, dlq], partitions=2)
    publisher = KafkaEventPublisher(KafkaPublisherConfig(bootstrap, topic, timeout_seconds=15))
    producer = make_producer(bootstrap)

    def read_letters(expect: int) -> list[LetterSummary]:
        letters = []
        for record in read_all(bootstrap, dlq, expect=expect, timeout_s=15):
            headers = DeadLetter.read_headers(list(record.headers))
            letters.append(
                (record.key, record.value, headers["reason"], int(headers["source-offset"]))
            )
        return letters

    def new_consumer() -> EventConsumer:
        return KafkaEventConsumer(
            make_consumer(bootstrap, group, session_timeout_ms=6000, heartbeat_interval_ms=1000),
            topic,
        )

    try:
        yield TransportUnderTest(
            publisher, new_consumer, KafkaDeadLetterSink(producer, dlq), read_letters,
            first_poll_s=30.0, quiet_s=8.0,
        )
    finally:
        publisher.close()
        producer.close(timeout=5)
        delete_topics(bootstrap, [topic, dlq])


TransportFactory = Callable[
    [pytest.FixtureRequest], contextlib.AbstractContextManager[TransportUnderTest]
]

TRANSPORT_FACTORIES: list[object] = [
    pytest.param(local_transport, id="local-queue"),
    pytest.param(kafka_transport, id="kafka", marks=pytest.mark.services),
]
