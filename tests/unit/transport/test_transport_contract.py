"""One contract, every event transport: the local queue, and real Kafka (services).

At-least-once: an event is delivered until it is committed, in order per
document, and committing a record commits the earlier ones of its partition.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from support.transports import TRANSPORT_FACTORIES, TransportFactory, TransportUnderTest, drain

from consumers.dead_letter import DeadLetter
from events.model import Action, ChangeEvent
from transport.consumer import Delivery


@pytest.fixture(params=TRANSPORT_FACTORIES)
def transport(request: pytest.FixtureRequest) -> Iterator[TransportUnderTest]:
    factory: TransportFactory = request.param
    with factory(request) as t:
        yield t


def event(doc: str, version: int) -> ChangeEvent:
    return ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc, action=Action.UPSERT, version=version,
        changed_at=datetime(2024, 1, version, tzinfo=UTC), content_type="text/markdown",
        content=f"# {doc}\n\nversion {version}",
    )


def versions_by_document(deliveries: list[Delivery]) -> dict[str, list[int]]:
    seen: dict[str, list[int]] = defaultdict(list)
    for d in deliveries:
        assert d.value is not None
        e = ChangeEvent.from_json_bytes(d.value)
        assert d.key == e.document_id.encode()
        seen[e.document_id].append(e.version)
    return dict(seen)


def test_events_arrive_whole_and_in_order_per_document(transport: TransportUnderTest) -> None:
    sent = [event(doc, v) for v in (1, 2, 3) for doc in ("refund", "terms", "privacy")]
    for e in sent:
        transport.publisher.publish(e)
    consumer = transport.new_consumer()
    try:
        got = drain(consumer, len(sent), transport.first_poll_s)
    finally:
        consumer.close()
    assert versions_by_document(got) == {d: [1, 2, 3] for d in ("refund", "terms", "privacy")}
    assert sorted(d.value or b"" for d in got) == sorted(e.to_json_bytes() for e in sent)


def test_what_was_not_committed_is_delivered_again(transport: TransportUnderTest) -> None:
    for e in [event("refund", 1), event("terms", 1), event("refund", 2)]:
        transport.publisher.publish(e)
    crashed = transport.new_consumer()
    assert len(drain(crashed, 3, transport.first_poll_s)) == 3
    crashed.close()  # as after a crash: nothing committed

    second = transport.new_consumer()
    again = drain(second, 3, transport.first_poll_s)
    assert versions_by_document(again) == {"refund": [1, 2], "terms": [1]}
    second.commit(again)
    second.close()

    third = transport.new_consumer()
    try:
        assert drain(third, 1, transport.quiet_s) == []
    finally:
        third.close()


def test_a_commit_covers_the_earlier_records_of_its_partition(
    transport: TransportUnderTest,
) -> None:
    for v in (1, 2, 3, 4):
        transport.publisher.publish(event("refund", v))  # one key: one partition
    first = transport.new_consumer()
    got = drain(first, 4, transport.first_poll_s)
    assert versions_by_document(got) == {"refund": [1, 2, 3, 4]}
    first.commit([got[1]])  # the second only: the first is covered too
    first.close()

    second = transport.new_consumer()
    try:
        rest = drain(second, 2, transport.first_poll_s)
    finally:
        second.close()
    assert versions_by_document(rest) == {"refund": [3, 4]}


def test_a_dead_letter_keeps_the_original_bytes_and_says_why(
    transport: TransportUnderTest,
) -> None:
    transport.dead_letters.send(
        DeadLetter(b"refund", b"\xff not json", "not_json", "not JSON: bad byte", "t", 0, 7)
    )
    transport.dead_letters.send(DeadLetter(b"terms", None, "not_json", "empty message", "t", 1, 8))
    assert sorted(transport.read_dead_letters(2)) == [  # in order per key only
        (b"refund", b"\xff not json", "not_json", 7),
        (b"terms", None, "not_json", 8),
    ]
