"""Transport factories for the transport contract suite: the local queue and real Kafka.

Each yields a ``TransportUnderTest`` on a fresh, unique topic: a publisher, a way
to open a new consumer (the same consumer group each time, as a restarted worker
would; built the way the composition root builds the worker's),
a dead-letter sink, and a way to read the dead letters back.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from consumers.dead_letter import DeadLetter, DeadLetterSink
from consumers.kafka_dead_letters import KafkaDeadLetterSink
from consumers.local_dead_letters import LocalDeadLetterSink
from support.kafka_admin import delete_topics
from support.kafka_helpers import read_all
from transport.consumer import Delivery, EventConsumer, Partition
from transport.kafka import ProducerPolicy, ensure_topics
from transport.kafka_consumer import KafkaEventConsumer
from transport.kafka_producer import KafkaEventPublisher, KafkaPublisherConfig, KafkaSender
from transport.local_clients import LocalQueueConsumer, LocalQueuePublisher
from transport.local_queue import LocalQueue
from transport.publisher import EventPublisher

# (key, value, reason, source offset) of each dead letter, in order.
LetterSummary = tuple[bytes | None, bytes | None, str, int]


@dataclass
class TransportUnderTest:
    publisher: EventPublisher
    new_consumer: Callable[[], EventConsumer]  # not subscribed yet
    dead_letters: DeadLetterSink
    read_dead_letters: Callable[[int], list[LetterSummary]]
    first_poll_s: float  # how long a new consumer may take to get its first records
    quiet_s: float  # how long to wait before concluding that nothing more comes
    partitions: frozenset[Partition]  # of the topic: a lone member of the group reads all


@dataclass
class Rebalances:
    """What a consumer's callbacks were told, in order: ("assign" | "revoke", partitions)."""

    calls: list[tuple[str, frozenset[Partition]]] = field(default_factory=list)

    def subscribe(self, consumer: EventConsumer) -> EventConsumer:
        consumer.subscribe(on_assign=lambda p: self.calls.append(("assign", p)),
                           on_revoke=lambda p: self.calls.append(("revoke", p)))
        return consumer

    def assigned(self) -> frozenset[Partition]:
        """What the callbacks say is assigned now."""
        now: frozenset[Partition] = frozenset()
        for kind, partitions in self.calls:
            now = now | partitions if kind == "assign" else now - partitions
        return now


def subscribed(consumer: EventConsumer) -> EventConsumer:
    consumer.subscribe()
    return consumer


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
            partitions=frozenset({Partition(topic, 0)}),
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
    sender = KafkaSender(bootstrap, ProducerPolicy())

    def read_letters(expect: int) -> list[LetterSummary]:
        letters = []
        for record in read_all(bootstrap, dlq, expect=expect, timeout_s=15):
            headers = DeadLetter.read_headers(list(record.headers))
            letters.append(
                (record.key, record.value, headers["reason"], int(headers["source-offset"]))
            )
        return letters

    def new_consumer() -> EventConsumer:
        return KafkaEventConsumer.connect(bootstrap, group, topic, session_timeout_ms=6000)

    try:
        yield TransportUnderTest(
            publisher, new_consumer, KafkaDeadLetterSink(sender, dlq), read_letters,
            first_poll_s=30.0, quiet_s=8.0,
            partitions=frozenset({Partition(topic, 0), Partition(topic, 1)}),
        )
    finally:
        publisher.close()
        sender.close()
        delete_topics(bootstrap, [topic, dlq])


TransportFactory = Callable[
    [pytest.FixtureRequest], contextlib.AbstractContextManager[TransportUnderTest]
]

TRANSPORT_FACTORIES: list[object] = [
    pytest.param(local_transport, id="local-queue"),
    pytest.param(kafka_transport, id="kafka", marks=pytest.mark.services),
]
