"""``policy-indexer config``: print the effective settings (secrets masked)."""

from __future__ import annotations

import json
from typing import Any

import click

from policy_indexer.settings import Settings, mask_url


def masked(value: Any) -> Any:
    """``value`` with credentials inside any URL masked (SecretStr fields are already)."""
    if isinstance(value, str) and "://" in value:
        return ",".join(mask_url(part) for part in value.split(","))
    if isinstance(value, list):
        return [masked(v) for v in value]
    if isinstance(value, dict):
        return {k: masked(v) for k, v in value.items()}
    return value


@click.command()
@click.pass_obj
def config(settings: Settings) -> None:
    """Print the effective settings as JSON, with every secret masked.

    Secret settings print as ``**********``; a user and password inside any URL
    (``https://elastic:pw@es:9200``) print as ``***@es:9200``.
    """
    shown = masked(settings.model_dump(mode="json"))
    click.echo(json.dumps(shown, indent=2, sort_keys=True))
