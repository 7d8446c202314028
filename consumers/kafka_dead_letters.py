"""Dead letters of the Kafka mode: a record on the dead-letter topic, sent on the one policy."""

from __future__ import annotations

from typing import Protocol

from consumers.dead_letter import DeadLetter
from consumers.errors import TransientError
from transport.kafka import Headers
from transport.publisher import PublishError


class RecordSender(Protocol):
    """What the sink needs of a producer: ``transport.kafka_producer.KafkaSender``."""

    def send(self, topic: str, *, key: bytes | None, value: bytes | None,
             headers: Headers | None = None) -> None: ...


class KafkaDeadLetterSink:
    def __init__(self, sender: RecordSender, topic: str) -> None:
        self.sender = sender
        self.topic = topic

    def send(self, letter: DeadLetter) -> None:
        # Kafka allows a record with neither key nor value; kafka-python refuses to
        # send one, so such a poison record is dead-lettered with an empty value.
        value = letter.value if letter.value is not None or letter.key is not None else b""
        try:
            self.sender.send(self.topic, key=letter.key, value=value, headers=letter.headers())
        except PublishError as exc:  # retried like any outage: the event is not lost
            raise TransientError(f"dead-letter to {self.topic!r}: {exc}") from exc
