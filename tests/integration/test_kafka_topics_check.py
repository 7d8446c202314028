"""``check_topics`` on the shared broker: every way a topic can fall short is its own line.

The topics here are made by a plain admin client with Kafka's defaults (as an
operator's tooling or auto-creation would make them), not by ``ensure_topics``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka.admin import KafkaAdminClient
from support.kafka_admin import delete_topics

from transport.kafka import (
    KAFKA_MAX_MESSAGE_BYTES,
    KafkaRefused,
    TopicSpec,
    check_topics,
    ensure_topics,
)

pytestmark = pytest.mark.services


@pytest.fixture
def plain_topic(kafka_bootstrap: str, unique: str) -> Iterator[str]:
    """One partition, one replica, Kafka's default min.insync.replicas and message size."""
    topic = f"{unique}-plain"
    admin = KafkaAdminClient(bootstrap_servers=[kafka_bootstrap])
    try:
        admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1,
                                     "configs": {"max.message.bytes": "1048588"}}})
    finally:
        admin.close()
    yield topic
    delete_topics(kafka_bootstrap, [topic])


def test_each_shortfall_is_one_line_naming_the_topic_and_the_setting(
    kafka_bootstrap: str, plain_topic: str, unique: str,
) -> None:
    missing = f"{unique}-missing"
    wanted = TopicSpec(partitions=3, replication_factor=3, min_insync_replicas=2)
    assert check_topics(kafka_bootstrap, [plain_topic, missing], wanted) == [
        f"topic {plain_topic!r} has 1 partitions, fewer than kafka_partitions=3",
        f"topic {plain_topic!r} has replication factor 1, below kafka_replication_factor=3",
        f"topic {plain_topic!r} has min.insync.replicas=1, below kafka_min_insync_replicas=2",
        f"topic {plain_topic!r} has max.message.bytes=1048588, below the "
        f"{KAFKA_MAX_MESSAGE_BYTES} the largest change event needs",
        f"topic {missing!r} does not exist (`policy-indexer topics create` makes it)",
    ]


def test_topics_made_by_ensure_topics_pass_the_check_and_are_not_remade(
    kafka_bootstrap: str, unique: str,
) -> None:
    topics = [f"{unique}-changes", f"{unique}-dlq"]
    try:
        first = ensure_topics(kafka_bootstrap, topics, partitions=2)
        assert (first.created, first.existing) == (topics, [])
        assert check_topics(kafka_bootstrap, topics, TopicSpec(partitions=2)) == []
        again = ensure_topics(kafka_bootstrap, topics, partitions=4)
        assert (again.created, again.existing) == ([], topics)
        # the second call did not grow them: the check says so against the new wish
        assert check_topics(kafka_bootstrap, topics, TopicSpec(partitions=4)) == [
            f"topic {t!r} has 2 partitions, fewer than kafka_partitions=4" for t in topics]
    finally:
        delete_topics(kafka_bootstrap, topics)


def test_a_replication_factor_above_the_brokers_is_refused_by_kafka(
    kafka_bootstrap: str, unique: str,
) -> None:
    with pytest.raises(KafkaRefused, match=r"did not create .*-rf3: .*[Rr]eplication factor"):
        ensure_topics(kafka_bootstrap, [f"{unique}-rf3"], partitions=1, replication_factor=3)
