"""``policy-indexer webhook``: serve the CMS webhook receiver (into Kafka) until SIGTERM."""

from __future__ import annotations

import click

from policy_indexer.runtime.webhook import WebhookNotConfigured, serve_webhook
from policy_indexer.settings import Settings


@click.command()
@click.pass_obj
def webhook(settings: Settings) -> None:
    """Serve POST /webhooks/cms, /healthz, /readyz and /metrics."""
    try:
        serve_webhook(settings)
    except WebhookNotConfigured as exc:
        raise click.ClickException(str(exc)) from exc
