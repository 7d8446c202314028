from __future__ import annotations

from typing import Any

import pytest

from consumers.dead_letter import DeadLetter
from consumers.errors import TransientError
from consumers.kafka_dead_letters import KafkaDeadLetterSink
from transport.kafka import Headers
from transport.publisher import PublishUnavailable


def test_a_dead_letter_keeps_the_bytes_and_says_why_and_where() -> None:
    letter = DeadLetter(
        b"doc", b"\xff not json", "not_json", "not JSON: bad byte", "changes", 2, 41
    )
    headers = DeadLetter.read_headers(letter.headers())
    assert headers == {
        "reason": "not_json",
        "error": "not JSON: bad byte",
        "source-topic": "changes",
        "source-partition": "2",
        "source-offset": "41",
    }
    assert letter.value == b"\xff not json"


def test_a_record_with_neither_key_nor_value_is_dead_lettered_with_an_empty_value() -> None:
    """kafka-python refuses to send key=None, value=None; Kafka itself allows such records."""
    sender = Sender()
    letter = DeadLetter(key=None, value=None, reason="invalid_event", error="empty record",
                        topic="changes", partition=0, offset=7)
    KafkaDeadLetterSink(sender, "dlq").send(letter)
    (sent,) = sender.sent
    assert sent["topic"] == "dlq"
    assert sent["value"] == b""
    assert dict(sent["headers"])["policy-indexer.source-offset"] == b"7"


def test_a_dead_letter_kafka_did_not_take_is_a_transient_error_naming_the_topic() -> None:
    """The worker retries it like any outage instead of stopping (the event stays uncommitted)."""
    sender = Sender(refuse=PublishUnavailable("Kafka topic='dlq' did not acknowledge within 15s"))
    letter = DeadLetter(b"doc", b"{", "not_json", "not JSON", "changes", 0, 7)
    with pytest.raises(TransientError, match=r"dead-letter to 'dlq': .*did not acknowledge"):
        KafkaDeadLetterSink(sender, "dlq").send(letter)


class Sender:
    """An in-memory ``RecordSender`` (our interface), refusing as kafka-python does."""

    def __init__(self, refuse: Exception | None = None) -> None:
        self.refuse = refuse
        self.sent: list[dict[str, Any]] = []

    def send(self, topic: str, *, key: bytes | None, value: bytes | None,
             headers: Headers | None = None) -> None:
        if key is None and value is None:
            raise AssertionError("Need at least one: key or value")
        if self.refuse is not None:
            raise self.refuse
        self.sent.append({"topic": topic, "key": key, "value": value, "headers": headers})
