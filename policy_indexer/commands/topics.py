"""``policy-indexer topics create|check``: the Kafka topics a deployment needs.

``create`` makes the change topic and its dead-letter topic when missing
(partitions, replication factor, ``min.insync.replicas``, ``max.message.bytes``
from the settings) and names the ones that already exist, which it leaves
alone. ``check`` describes both and exits 1 with one line per problem, 0 when
they are as the settings need. Either exits 1 with one line when Kafka cannot
be reached or refuses the credentials.
"""

from __future__ import annotations

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.connections import kafka_connection
from policy_indexer.runtime.topics import (
    check_configured_topics,
    create_configured_topics,
    expected_topics,
)
from policy_indexer.settings import Settings


@click.group("topics")
def topics() -> None:
    """Create or check the change and dead-letter topics (Kafka mode)."""


def _warn_unused(settings: Settings) -> None:
    unused = kafka_connection(settings).unused()
    if unused:
        click.echo(f"note: {', '.join(unused)} set but kafka_security_protocol="
                   f"{settings.kafka_security_protocol} does not use them", err=True)


@topics.command("create")
@click.pass_obj
@says_errors()
def create_command(settings: Settings) -> None:
    """Create the missing topics; existing ones are reported and left as they are."""
    _warn_unused(settings)
    names, spec = expected_topics(settings)
    done = create_configured_topics(settings)
    for name in names:
        if name in done.created:
            click.echo(f"created {name}: {spec.partitions} partitions, replication factor "
                       f"{spec.replication_factor}, min.insync.replicas "
                       f"{spec.min_insync_replicas}, max.message.bytes {spec.max_message_bytes}")
        else:
            click.echo(f"exists  {name} (left as it is; `policy-indexer topics check` "
                       "compares it with the settings)")


@topics.command("check")
@click.pass_obj
def check_command(settings: Settings) -> None:
    """Describe the topics; exit 1 listing each problem, 0 when all are as configured."""
    _warn_unused(settings)
    names, spec = expected_topics(settings)
    problems = check_configured_topics(settings)
    for problem in problems:
        click.echo(f"problem: {problem}")
    if problems:
        raise click.exceptions.Exit(1)
    click.echo(f"ok: {', '.join(names)} on {kafka_connection(settings).describe()}: "
               f">= {spec.partitions} partitions, replication factor >= "
               f"{spec.replication_factor}, min.insync.replicas >= {spec.min_insync_replicas}, "
               f"max.message.bytes >= {spec.max_message_bytes}")
