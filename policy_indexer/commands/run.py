"""``policy-indexer run``: the pipeline (embedded in one process, or the Kafka workers)."""

from __future__ import annotations

import sys

import click

from policy_indexer.settings import Settings


@click.command()
@click.option("--processes", type=int, default=None,
              help="Kafka mode: worker processes (default: settings.worker_processes).")
@click.pass_obj
def run(settings: Settings, processes: int | None) -> None:
    """Run the indexing pipeline (embedded by default; PIPELINE=kafka for the workers)."""
    from policy_indexer.runtime.backends import backends_class  # noqa: PLC0415
    from policy_indexer.runtime.embedded import RunError  # noqa: PLC0415
    from policy_indexer.runtime.kafka import WorkersFailed  # noqa: PLC0415

    try:
        backends_class(settings).run(settings, processes=processes, echo=click.echo)
    except RunError as exc:
        raise click.ClickException(str(exc)) from exc
    except WorkersFailed as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
