"""The Kafka publisher with no broker behind its address: quick, typed refusals, never a hang."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from events.model import ChangeEvent
from transport.kafka_producer import KafkaEventPublisher, KafkaPublisherConfig
from transport.publisher import PublishUnavailable

EVENT = ChangeEvent(event_id="e1", document_id="d1", action="delete", version=2,
                    changed_at="2026-11-29T18:04:05Z")


@pytest.fixture
def publisher() -> Iterator[KafkaEventPublisher]:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{probe.getsockname()[1]}"
    publisher = KafkaEventPublisher(KafkaPublisherConfig(
        bootstrap_servers=dead, topic="t", timeout_seconds=1, reconnect_interval_seconds=60))
    yield publisher
    publisher.close()


def test_no_broker_is_unavailable_and_the_next_try_waits_for_the_interval(
    publisher: KafkaEventPublisher,
) -> None:
    with pytest.raises(PublishUnavailable, match=r"cannot connect to Kafka at 127\.0\.0\.1:"):
        publisher.publish(EVENT)
    # while it waits, the refusal still says why, not only when the next try is
    with pytest.raises(PublishUnavailable,
                       match=r"cannot connect to Kafka at 127\.0\.0\.1:\d+ \(Connection refused\)"
                             r".*; next try in"):
        publisher.publish(EVENT)
    assert publisher.ready() is False


def test_a_closed_publisher_refuses(publisher: KafkaEventPublisher) -> None:
    publisher.close()
    with pytest.raises(PublishUnavailable, match="closed"):
        publisher.publish(EVENT)


def test_a_bootstrap_list_without_a_broker_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="bootstrap_servers=' , ' names no broker"):
        KafkaEventPublisher(KafkaPublisherConfig(bootstrap_servers=" , ", topic="t"))
