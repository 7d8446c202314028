"""``policy-indexer replay FILE.jsonl[.gz] [--to kafka|embedded]``: replay a change log.

``--to kafka`` publishes the log as events; ``--to embedded`` (the default when
``settings.pipeline`` is embedded) feeds the embedded mode and returns once its
index has caught up (``policy_indexer.embedded_replay``).
"""

from __future__ import annotations

import time
from pathlib import Path

import click
from tqdm import tqdm

from consumers.transport import ensure_topics, make_producer
from events.changelog import ChangeLogError, count_lines, read_changelog
from policy_indexer.commands.run import kill_hook
from policy_indexer.embedded import Embedded
from policy_indexer.embedded_replay import ReplayStopped, replay_embedded
from policy_indexer.settings import Settings
from store.errors import StoreError
from transport.local_queue import QueueError


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
    topic = topic or settings.kafka_topic
    ensure_topics(settings.kafka_bootstrap_servers, [topic], partitions=settings.kafka_partitions)
    producer = make_producer(settings.kafka_bootstrap_servers)
    total = count_lines(changelog) if limit is None else limit
    sent = 0
    started = time.monotonic()
    try:
        with tqdm(total=total, unit="change", desc=f"replay -> {topic}") as bar:
            for event in read_changelog(changelog):
                if limit is not None and sent >= limit:
                    break
                if rate:
                    delay = started + sent / rate - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                producer.send(topic, key=event.document_id.encode(), value=event.to_json_bytes())
                sent += 1
                bar.update(1)
        producer.flush(timeout=60)
    except ChangeLogError as exc:
        raise click.ClickException(f"{exc} ({sent} changes were published before it)") from exc
    finally:
        producer.close(timeout=10)
    click.echo(f"published {sent} changes from {changelog} to {topic} ({target})")


def _replay_embedded(settings: Settings, changelog: Path, limit: int | None) -> None:
    """``--to embedded``: queue, index in this process, return when caught up."""
    try:
        embedded = Embedded.open(settings)
    except (StoreError, QueueError) as exc:
        raise click.ClickException(f"cannot open the embedded mode: {exc}") from exc
    try:
        result = replay_embedded(
            embedded, changelog, limit=limit, checkpoint=kill_hook(settings.worker_kill_at)
        )
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
