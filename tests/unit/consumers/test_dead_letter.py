from __future__ import annotations

from consumers.dead_letter import DeadLetter


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
    from typing import Any

    from consumers.dead_letter import DeadLetter
    from consumers.worker import KafkaDeadLetterSink

    class Future:
        def get(self, timeout: float | None = None) -> None:
            return None

    class Producer:
        def __init__(self) -> None:
            self.sent: list[dict[str, Any]] = []

        def send(self, topic: str, **kw: Any) -> Future:
            if kw["key"] is None and kw["value"] is None:
                raise AssertionError("Need at least one: key or value")
            self.sent.append({"topic": topic, **kw})
            return Future()

    producer = Producer()
    letter = DeadLetter(key=None, value=None, reason="invalid_event", error="empty record",
                        topic="changes", partition=0, offset=7)
    KafkaDeadLetterSink(producer, "dlq").send(letter)
    (sent,) = producer.sent
    assert sent["value"] == b""
    assert dict(sent["headers"])["policy-indexer.source-offset"] == b"7"
