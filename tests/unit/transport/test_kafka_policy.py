"""The one producer policy: what kafka-python actually runs with, and clear refusals."""

from __future__ import annotations

import pytest

from transport.kafka import ProducerPolicy, broker_list, ensure_topics, new_producer


@pytest.mark.services
def test_a_producer_on_the_policy_is_idempotent_with_acks_all_and_a_bounded_delivery(
    kafka_bootstrap: str,
) -> None:
    """kafka-python silently turns idempotence off when another option conflicts with it."""
    producer = new_producer(kafka_bootstrap, ProducerPolicy(timeout_seconds=7))
    try:
        config = producer.config
        assert config["enable_idempotence"] is True
        assert config["acks"] == -1
        assert config["delivery_timeout_ms"] == 7000
    finally:
        producer.close(timeout=5)


def test_a_bad_policy_is_refused_naming_the_field_and_value() -> None:
    with pytest.raises(ValueError, match="timeout_seconds must be positive, got 0"):
        ProducerPolicy(timeout_seconds=0)
    with pytest.raises(ValueError, match="max_message_bytes must be positive, got -1"):
        ProducerPolicy(max_message_bytes=-1)


def test_a_bootstrap_list_naming_no_broker_is_refused() -> None:
    assert broker_list(" a:1 ,b:2,") == ["a:1", "b:2"]
    with pytest.raises(ValueError, match="bootstrap_servers=' , ' names no broker"):
        broker_list(" , ")


def test_topics_need_at_least_one_partition() -> None:
    with pytest.raises(ValueError, match="partitions must be at least 1, got 0"):
        ensure_topics("127.0.0.1:9", ["t"], partitions=0)
