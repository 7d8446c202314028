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
from policy_indexer.embedded_replay import run_embedded_replay
from policy_indexer.settings import Settings


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
        run_embedded_replay(settings, changelog, limit)
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
