"""``policy-indexer topics create|check``: the change and dead-letter topics, from settings.

``expected_topics(settings)`` is what the deployment needs (the two topic
names and one ``TopicSpec``: ``kafka_partitions``, ``kafka_replication_factor``,
``kafka_min_insync_replicas`` and room for the largest event).
``create_configured_topics`` makes the missing ones and leaves existing ones as
they are; ``check_configured_topics`` lists what differs, one line per problem
(``doctor`` calls ``transport.kafka.check_topics(connection, *expected_topics(s))``).
"""

from __future__ import annotations

from collections.abc import Sequence

from policy_indexer.runtime.connections import kafka_connection
from policy_indexer.settings import Settings
from transport.kafka_topics import (
    KAFKA_MAX_MESSAGE_BYTES,
    TopicsCreated,
    TopicSpec,
    check_topics,
    ensure_topics,
)


def expected_topics(settings: Settings) -> tuple[list[str], TopicSpec]:
    """The topics this deployment uses and what each must have."""
    spec = TopicSpec(
        partitions=settings.kafka_partitions,
        replication_factor=settings.kafka_replication_factor,
        min_insync_replicas=settings.kafka_min_insync_replicas,
        max_message_bytes=KAFKA_MAX_MESSAGE_BYTES,
    )
    return [settings.kafka_topic, settings.kafka_dead_letter_topic], spec


def create_configured_topics(
    settings: Settings, topics: Sequence[str] | None = None
) -> TopicsCreated:
    """Create the missing topics (by default the change and dead-letter topics) with the
    settings' spec; ``KafkaConnectError`` (one line) when Kafka says no."""
    configured, spec = expected_topics(settings)
    return ensure_topics(kafka_connection(settings), configured if topics is None else topics,
                         partitions=spec.partitions,
                         replication_factor=spec.replication_factor,
                         min_insync_replicas=spec.min_insync_replicas,
                         max_message_bytes=spec.max_message_bytes)


def check_configured_topics(settings: Settings) -> list[str]:
    """What is wrong with the topics against the settings; empty when all is well."""
    topics, spec = expected_topics(settings)
    return check_topics(kafka_connection(settings), topics, spec)
