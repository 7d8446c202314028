"""``policy-indexer config``: print the effective settings (secrets masked)."""

from __future__ import annotations

import json

import click

from policy_indexer.settings import Settings


@click.command()
@click.pass_obj
def config(settings: Settings) -> None:
    """Print the effective settings as JSON, with secrets masked."""
    click.echo(json.dumps(settings.model_dump(mode="json"), indent=2, sort_keys=True))
