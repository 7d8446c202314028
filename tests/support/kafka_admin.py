"""Kafka administration that only tests and benchmarks need: dropping topics, reading lag.

These lived in ``consumers/transport.py`` though no production code called them;
here they are test support (``bench/`` imports them from here too).

``group_lag`` raises whatever Kafka says. ``lag_or_none`` is for wait loops: a
broker that has just started (or restarted) answers group requests with one
retriable error or another while it elects and loads the group coordinator
(``CoordinatorNotAvailable``, ``CoordinatorLoadInProgress``, ``NotCoordinator``,
a connection reset...). Kafka marks all of them ``retriable``, and a wait loop
should read every one of them as "not yet" rather than list the ones it has met.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError


def delete_topics(bootstrap: str, topics: Sequence[str]) -> None:
    """Delete the topics; clean-up, so a topic already gone (or a broker gone) is no error."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
    try:
        with contextlib.suppress(KafkaError):
            admin.delete_topics(list(topics))
    finally:
        admin.close()


def group_lag(bootstrap: str, group: str, topic: str) -> int | None:
    """Records of ``topic`` that ``group`` has not committed yet (None before its first commit)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","))
    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=None)
    try:
        committed = admin.list_group_offsets(group).get(group, {})
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        ends = consumer.end_offsets(partitions)
        if not committed:
            return None
        return sum(
            int(ends[tp]) - (int(committed[tp].offset) if tp in committed else 0)
            for tp in partitions
        )
    finally:
        consumer.close()
        admin.close()


def lag_or_none(bootstrap: str, group: str, topic: str) -> int | None:
    """``group_lag``, or None while Kafka answers with a retriable error (not ready yet)."""
    try:
        return group_lag(bootstrap, group, topic)
    except KafkaError as exc:
        if exc.retriable:
            return None
        raise
