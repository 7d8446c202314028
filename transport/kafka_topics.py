"""Topics: ``ensure_topics`` creates the missing ones, ``check_topics`` says what is wrong.

Both the change topic and its dead-letter topic are sized by one ``TopicSpec``:
partitions, replication factor, ``min.insync.replicas`` (with acks=all, the
replicas that must have a record before it counts as written) and
``max.message.bytes`` (room for the largest change event; Kafka's default of
about 1 MiB would refuse a large policy document). A topic that exists is never
altered here: ``check_topics`` reports how it differs, and the operator decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import KafkaError, for_code

from transport.kafka_connection import (
    KafkaConnectError,
    KafkaConnection,
    KafkaRefused,
    KafkaUnreachable,
    as_connection,
)
from transport.kafka_diagnose import diagnose

# The largest change event a topic must hold: a 10 MiB webhook body plus the event's
# own fields. Kafka's default (~1 MiB) would refuse every large policy document.
KAFKA_MAX_MESSAGE_BYTES = 11 * 1024 * 1024
# How long an admin client tries to bootstrap before it gives up (kafka-python: 30 s).
ADMIN_TIMEOUT_SECONDS = 10.0


def open_admin(
    connection: KafkaConnection | str, *, timeout_s: float = ADMIN_TIMEOUT_SECONDS
) -> KafkaAdminClient:
    """An admin client on ``connection``; ``KafkaConnectError`` (one line) when it cannot be."""
    connection = as_connection(connection)
    timeout_ms = max(1, int(timeout_s * 1000))
    try:
        return KafkaAdminClient(**connection.client_options(), client_id="policy-indexer-admin",
                                request_timeout_ms=timeout_ms, bootstrap_timeout_ms=timeout_ms)
    except KafkaError as exc:
        raise diagnose(connection, exc, timeout_s=timeout_s) from exc


@dataclass(frozen=True)
class TopicSpec:
    """What the change and dead-letter topics need: sizes that ``topics create`` makes and
    ``topics check`` verifies."""

    partitions: int = 3
    replication_factor: int = 1
    min_insync_replicas: int = 1
    max_message_bytes: int = KAFKA_MAX_MESSAGE_BYTES

    def __post_init__(self) -> None:
        for name in ("partitions", "replication_factor", "min_insync_replicas",
                     "max_message_bytes"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value!r}")
        if self.min_insync_replicas > self.replication_factor:
            raise ValueError(
                f"min_insync_replicas {self.min_insync_replicas} is above replication_factor "
                f"{self.replication_factor}: no write with acks=all would ever succeed"
            )

    def topic_configs(self) -> dict[str, str]:
        return {"max.message.bytes": str(self.max_message_bytes),
                "min.insync.replicas": str(self.min_insync_replicas)}


@dataclass(frozen=True)
class TopicsCreated:
    created: list[str]
    existing: list[str]  # already there: kept as they are (``topics check`` verifies them)


# Kafka error codes this module tells apart.
_TOPIC_ALREADY_EXISTS = 36
_UNKNOWN_TOPIC = 3


def ensure_topics(
    connection: KafkaConnection | str,
    topics: Sequence[str],
    *,
    partitions: int,
    replication_factor: int = 1,
    min_insync_replicas: int = 1,
    max_message_bytes: int = KAFKA_MAX_MESSAGE_BYTES,
) -> TopicsCreated:
    """Create the topics that are missing, sized for the largest change event.

    A topic that already exists keeps its configuration (``transport.kafka_topics.
    check_topics`` says what differs). A topic the broker refuses to create
    (replication factor above the brokers, no permission) is ``KafkaRefused``.
    """
    spec = TopicSpec(partitions, replication_factor, min_insync_replicas, max_message_bytes)
    connection = as_connection(connection)
    admin = open_admin(connection)
    try:
        response = admin.create_topics(
            {topic: {"num_partitions": spec.partitions,
                     "replication_factor": spec.replication_factor,
                     "configs": spec.topic_configs()} for topic in topics},
            raise_errors=False,
        )
    except KafkaError as exc:
        raise KafkaUnreachable(
            f"Kafka at {connection.describe()} did not create the topics "
            f"{', '.join(topics)}: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        admin.close()
    created: list[str] = []
    existing: list[str] = []
    failed: list[tuple[str, type[KafkaError]]] = []
    for result in response["topics"]:
        code = result["error_code"]
        if code == 0:
            created.append(result["name"])
        elif code == _TOPIC_ALREADY_EXISTS:
            existing.append(result["name"])
        else:
            error = for_code(code)
            why = result.get("error_message") or error.__name__
            failed.append((f"{result['name']}: {why}", error))
    if failed:
        retriable = all(error.retriable for _, error in failed)
        error_class = KafkaUnreachable if retriable else KafkaRefused
        raise error_class(f"Kafka at {connection.bootstrap_servers} did not create "
                          + "; ".join(text for text, _ in failed))
    return TopicsCreated(created, existing)


def check_topics(
    connection: KafkaConnection | str, topics: Sequence[str], expected: TopicSpec
) -> list[str]:
    """What is wrong with ``topics`` against ``expected``: one line each; empty when all is well.

    Each topic must exist with at least ``expected.partitions`` partitions,
    ``expected.replication_factor`` replicas, a ``min.insync.replicas`` of at
    least ``expected.min_insync_replicas`` (and at most its replicas, or no write
    with acks=all succeeds) and a ``max.message.bytes`` that holds the largest
    event. A Kafka that cannot be reached is one problem, saying why.
    """
    try:
        admin = open_admin(connection)
    except KafkaConnectError as exc:
        return [str(exc)]
    try:
        described = {t["name"]: t for t in admin.describe_topics(list(topics))}
        present = [t for t in topics if described.get(t, {}).get("error_code") == 0]
        configs = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t,
                            ["min.insync.replicas", "max.message.bytes"]) for t in present],
            config_filter="all",
        ).get("topic", {}) if present else {}
    except KafkaError as exc:
        return [f"cannot describe the topics {', '.join(topics)} on Kafka at "
                f"{as_connection(connection).bootstrap_servers}: {type(exc).__name__}: {exc}"]
    finally:
        admin.close()
    problems: list[str] = []
    for topic in topics:
        info = described.get(topic)
        if info is None or info["error_code"] != 0:
            code = None if info is None else info["error_code"]
            why = ("does not exist" if code in (None, _UNKNOWN_TOPIC)
                   else f"cannot be described: {for_code(code).__name__}")
            problems.append(f"topic {topic!r} {why} (`policy-indexer topics create` makes it)")
            continue
        problems.extend(_topic_problems(topic, info, configs.get(topic, {}), expected))
    return problems


def _topic_problems(
    topic: str, info: dict[str, Any], configs: dict[str, Any], expected: TopicSpec
) -> list[str]:
    problems: list[str] = []
    partitions = info["partitions"]
    if len(partitions) < expected.partitions:
        problems.append(f"topic {topic!r} has {len(partitions)} partitions, fewer than "
                        f"kafka_partitions={expected.partitions}")
    replicas = min((len(p["replica_nodes"]) for p in partitions), default=0)
    if replicas < expected.replication_factor:
        problems.append(f"topic {topic!r} has replication factor {replicas}, below "
                        f"kafka_replication_factor={expected.replication_factor}")
    min_isr = _int_config(configs, "min.insync.replicas")
    if min_isr is None:
        problems.append(f"topic {topic!r}: min.insync.replicas not reported by the broker")
    elif min_isr < expected.min_insync_replicas:
        problems.append(f"topic {topic!r} has min.insync.replicas={min_isr}, below "
                        f"kafka_min_insync_replicas={expected.min_insync_replicas}")
    elif replicas and min_isr > replicas:
        problems.append(f"topic {topic!r} has min.insync.replicas={min_isr} above its "
                        f"{replicas} replicas: no write with acks=all can succeed")
    max_bytes = _int_config(configs, "max.message.bytes")
    if max_bytes is None:
        problems.append(f"topic {topic!r}: max.message.bytes not reported by the broker")
    elif max_bytes < expected.max_message_bytes:
        problems.append(f"topic {topic!r} has max.message.bytes={max_bytes}, below the "
                        f"{expected.max_message_bytes} the largest change event needs")
    return problems


def _int_config(configs: dict[str, Any], name: str) -> int | None:
    entry = configs.get(name)
    try:
        return int(entry["value"]) if entry else None
    except (KeyError, TypeError, ValueError):
        return None
