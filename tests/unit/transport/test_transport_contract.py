"""One contract, every event transport: the local queue, and real Kafka (services).

At-least-once: an event is delivered until it is committed, in order per
document, and committing a record commits the earlier ones of its partition.
What the worker loop relies on besides: the assignment callback names a
partition before any of its records is handed out, a paused partition hands
out nothing and keeps its place, and a transport within reach says so. The
consumers are the ones the composition root gives the worker.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from support.transports import (
    TRANSPORT_FACTORIES,
    Rebalances,
    TransportFactory,
    TransportUnderTest,
    drain,
    kafka_transport,
    subscribed,
)
from support.waiting import wait_until

from consumers.dead_letter import DeadLetter
from events.model import Action, ChangeEvent
from transport.consumer import Delivery, EventConsumer, Partition


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
    consumer = subscribed(transport.new_consumer())
    try:
        got = drain(consumer, len(sent), transport.first_poll_s)
    finally:
        consumer.close()
    assert versions_by_document(got) == {d: [1, 2, 3] for d in ("refund", "terms", "privacy")}
    assert sorted(d.value or b"" for d in got) == sorted(e.to_json_bytes() for e in sent)


def test_what_was_not_committed_is_delivered_again(transport: TransportUnderTest) -> None:
    for e in [event("refund", 1), event("terms", 1), event("refund", 2)]:
        transport.publisher.publish(e)
    crashed = subscribed(transport.new_consumer())
    assert len(drain(crashed, 3, transport.first_poll_s)) == 3
    crashed.close()  # as after a crash: nothing committed

    second = subscribed(transport.new_consumer())
    again = drain(second, 3, transport.first_poll_s)
    assert versions_by_document(again) == {"refund": [1, 2], "terms": [1]}
    second.commit(again)
    second.close()

    third = subscribed(transport.new_consumer())
    try:
        assert drain(third, 1, transport.quiet_s) == []
    finally:
        third.close()


def test_a_commit_covers_the_earlier_records_of_its_partition(
    transport: TransportUnderTest,
) -> None:
    for v in (1, 2, 3, 4):
        transport.publisher.publish(event("refund", v))  # one key: one partition
    first = subscribed(transport.new_consumer())
    got = drain(first, 4, transport.first_poll_s)
    assert versions_by_document(got) == {"refund": [1, 2, 3, 4]}
    first.commit([got[1]])  # the second only: the first is covered too
    first.close()

    second = subscribed(transport.new_consumer())
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


def test_the_assignment_is_announced_before_any_record_of_it(
    transport: TransportUnderTest,
) -> None:
    for doc in ("refund", "terms", "privacy", "shipping"):
        transport.publisher.publish(event(doc, 1))
    rebalances = Rebalances()
    consumer = rebalances.subscribe(transport.new_consumer())
    got: list[Delivery] = []

    def poll() -> list[Delivery]:
        batch = consumer.poll(100, 0.5)
        assert {d.source for d in batch} <= rebalances.assigned()
        got.extend(batch)
        return got

    try:
        wait_until(poll, transport.first_poll_s, "the 4 records", accept=lambda g: len(g) >= 4)
        assert len(got) == 4
        assert rebalances.assigned() == consumer.assignment() == transport.partitions
        assert consumer.unreachable() is None
    finally:
        consumer.close()


def test_a_paused_partition_hands_out_nothing_and_keeps_its_place(
    transport: TransportUnderTest,
) -> None:
    transport.publisher.publish(event("refund", 1))
    consumer = subscribed(transport.new_consumer())
    try:
        assert versions_by_document(drain(consumer, 1, transport.first_poll_s)) == {"refund": [1]}
        consumer.pause(consumer.assignment())
        for v in (2, 3):
            transport.publisher.publish(event("refund", v))
        assert quiet(consumer, transport.quiet_s) == []
        consumer.resume(consumer.assignment())
        rest = drain(consumer, 2, transport.first_poll_s)
    finally:
        consumer.close()
    assert versions_by_document(rest) == {"refund": [2, 3]}


def test_committing_nothing_changes_nothing(transport: TransportUnderTest) -> None:
    transport.publisher.publish(event("refund", 1))
    first = subscribed(transport.new_consumer())
    assert len(drain(first, 1, transport.first_poll_s)) == 1
    first.commit([])
    first.close()
    second = subscribed(transport.new_consumer())
    try:
        assert versions_by_document(drain(second, 1, transport.first_poll_s)) == {"refund": [1]}
    finally:
        second.close()


@pytest.mark.services
def test_a_member_joining_takes_partitions_after_the_revoke_callback_committed_them(
    request: pytest.FixtureRequest,
) -> None:
    """Kafka only (the local queue has one consumer): the worker commits in ``on_revoke``."""
    with kafka_transport(request) as transport:
        docs = [f"doc-{i}" for i in range(12)]
        for doc in docs:
            transport.publisher.publish(event(doc, 1))
        got: list[Delivery] = []
        revoked: list[frozenset[Partition]] = []
        first = transport.new_consumer()

        def on_revoke(partitions: frozenset[Partition]) -> None:
            revoked.append(partitions)
            first.commit([d for d in got if d.source in partitions])

        first.subscribe(on_revoke=on_revoke)
        got.extend(drain(first, len(docs), transport.first_poll_s))
        assert len(got) == len(docs)
        assert first.assignment() == transport.partitions
        second = subscribed(transport.new_consumer())
        try:
            late: list[Delivery] = []

            def both_polled() -> tuple[frozenset[Partition], frozenset[Partition]]:
                assert first.poll(100, 0.2) == []
                late.extend(second.poll(100, 0.2))
                return first.assignment(), second.assignment()

            wait_until(both_polled, transport.first_poll_s,
                       "a rebalance between the two members", accept=all)
            assert any(revoked), "the first member was never told what it lost"
            assert first.assignment() | second.assignment() == transport.partitions
            assert not first.assignment() & second.assignment()
            late.extend(quiet(second, transport.quiet_s))
            assert late == []  # the revoke callback's commit covered all it had
        finally:
            second.close()
            first.close()


def quiet(consumer: EventConsumer, seconds: float) -> list[Delivery]:
    """Everything handed out within ``seconds`` (a paused consumer: nothing)."""
    got: list[Delivery] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got.extend(consumer.poll(100, 0.2))
    return got
