"""``policy-indexer replay FILE.jsonl[.gz] [--to kafka|embedded]``: replay a change log.

``--to kafka`` publishes the log as events; ``--to embedded`` (the default when
``settings.pipeline`` is embedded) feeds the embedded mode and returns once its
index has caught up.
"""

from __future__ import annotations

from pathlib import Path

import click

from events.changelog import ChangeLogError
from policy_indexer.runtime import faults
from policy_indexer.runtime.backends import EmbeddedBackends
from policy_indexer.runtime.replay import ReplayStopped, replay_embedded, replay_to_kafka
from policy_indexer.settings import Settings
from store.errors import StoreError
from transport.kafka_connection import KafkaConnectError
from transport.local_queue import QueueError
from transport.publisher import PublishError


@click.command()
@click.argument("changelog", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--to", "target", type=click.Choice(["kafka", "embedded"]), default=None,
              help="Kafka, or the embedded mode's queue and index (default: settings.pipeline).")
@click.option("--topic", default=None, help="Topic (default: settings.kafka_topic).")
@click.option("--rate", type=float, default=None,
              help="Changes per second (default: as fast as possible).")
@click.option("--limit", type=int, default=None, help="Publish only the first N changes.")
@click.pass_obj
def replay(  # noqa: PLR0917 (one parameter per click option)
    settings: Settings, changelog: Path, target: str | None, topic: str | None,
    rate: float | None, limit: int | None,
) -> None:
    """Publish a corpus change log (shared/corpora format) as ChangeEvents, in order."""
    target = target or settings.pipeline
    if target == "embedded":
        if topic is not None or rate is not None:
            raise click.UsageError("--topic and --rate apply to --to kafka only")
        _replay_embedded(settings, changelog, limit)
        return
    try:
        done = replay_to_kafka(settings, changelog, topic=topic, rate=rate, limit=limit)
    except (ChangeLogError, KafkaConnectError, PublishError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"published {done.published} changes from {changelog} to {done.topic} ({target})")


def _replay_embedded(settings: Settings, changelog: Path, limit: int | None) -> None:
    """``--to embedded``: queue, index in this process, return when caught up."""
    try:
        embedded = EmbeddedBackends.open(settings)
    except (StoreError, QueueError) as exc:
        raise click.ClickException(f"cannot open the embedded mode: {exc}") from exc
    try:
        result = replay_embedded(embedded, changelog, limit=limit, checkpoint=faults.checkpoint())
    except (ChangeLogError, ReplayStopped, StoreError, QueueError) as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        embedded.close()
    click.echo(
        f"replayed {result.queued} changes from {changelog} into the embedded index at "
        f"{settings.embedded_dir}: {result.documents} documents, {result.chunks} chunks, "
        f"{result.dead_letters} dead letters"
        + ("" if result.consumed_here else " (indexed by the running policy-indexer)")
    )
