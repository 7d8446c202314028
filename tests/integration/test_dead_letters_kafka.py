"""``dead-letters list|show|retry`` in Kafka mode, on the real broker.

Dead letters written the way a worker writes them (``KafkaDeadLetterSink``), one of
them twice (a redelivery after a crash): ``list`` shows each failed event once,
``show`` the original value, ``retry`` puts it back on the change topic with its
key, and an unknown id is refused naming it. The embedded mode's side is in
``tests/integration/test_poison_events_embedded.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.kafka_helpers import read_all
from support.kafka_topics import temporary_topic

from consumers.dead_letter import DeadLetter
from consumers.kafka_dead_letters import KafkaDeadLetterSink
from policy_indexer.runtime.dead_letters import (
    DeadLetterNotFound,
    list_dead_letters,
    retry_dead_letters,
    show_dead_letter,
)
from policy_indexer.settings import Settings
from transport.kafka import ProducerPolicy
from transport.kafka_producer import KafkaSender

pytestmark = pytest.mark.services


@pytest.fixture
def settings(kafka_bootstrap: str, unique: str) -> Iterator[Settings]:
    with temporary_topic(kafka_bootstrap, f"{unique}-changes", partitions=1) as topic, \
            temporary_topic(kafka_bootstrap, f"{unique}-dlq", partitions=2) as dlq:
        yield Settings(pipeline="kafka", kafka_bootstrap_servers=kafka_bootstrap,
                       kafka_topic=topic, kafka_dead_letter_topic=dlq)


def test_list_show_retry_on_kafka(settings: Settings) -> None:
    value = b'{"event_id": "e1", "document_id": "refund", "version": 9223372036854775808}'
    resent = value.replace(b'"e1"', b'"e2"')  # the same change sent again: same fingerprint
    sender = KafkaSender(settings.kafka_bootstrap_servers, ProducerPolicy())
    sink = KafkaDeadLetterSink(sender, settings.kafka_dead_letter_topic)
    try:
        sink.send(DeadLetter(b"refund", value, "schema", "document 'refund': version", "t", 0, 4))
        sink.send(DeadLetter(b"refund", value, "schema", "document 'refund': version", "t", 0, 4))
        sink.send(DeadLetter(b"refund", resent, "schema", "document 'refund': version", "t", 0, 9))
        sink.send(DeadLetter(b"terms", b"{not json", "not_json", "not JSON", "t", 0, 5))
    finally:
        sender.close()
    letters = list_dead_letters(settings)
    assert sorted((d.document_id, d.reason) for d in letters) == [
        ("refund", "schema"), ("terms", "not_json")]
    refund = next(d for d in letters if d.document_id == "refund")
    assert refund.source == "t/0/4" and "version" in refund.error
    assert show_dead_letter(settings, refund.letter_id).value == value
    with pytest.raises(DeadLetterNotFound, match="'9:99'"):
        retry_dead_letters(settings, ["9:99"])
    assert retry_dead_letters(settings, [refund.letter_id]) == 1
    (record,) = read_all(settings.kafka_bootstrap_servers, settings.kafka_topic, expect=1)
    assert (record.key, record.value) == (b"refund", value)
