"""``policy-indexer run``: start the pipeline.

Until the embedded mode and the worker land (issues 8 and 4), this says
exactly what is missing and exits non-zero instead of pretending to run.
"""

from __future__ import annotations

import click

from policy_indexer.settings import Settings

MISSING = (
    "the indexing worker (issue 4)",
    "the embedded SQLite store and local queue (issue 8)",
)


@click.command()
@click.pass_obj
def run(settings: Settings) -> None:
    """Run the indexing pipeline (embedded by default)."""
    lines = "\n".join(f"  - {item}" for item in MISSING)
    raise click.ClickException(
        f"`policy-indexer run` cannot run yet; still missing:\n{lines}\n"
        f"Configured Kafka: {settings.kafka_bootstrap_servers}, "
        f"Elasticsearch: {settings.elasticsearch_url}."
    )
