"""``policy-indexer webhook``: serve the CMS webhook receiver until SIGTERM.

Kafka may be down at start: the receiver still starts, answers 503 (with
Retry-After) and ``/readyz`` 503 until it can reach the broker.
"""

from __future__ import annotations

import click
import structlog
from prometheus_client import CollectorRegistry

from policy_indexer.settings import Settings
from transport.kafka_producer import KafkaEventPublisher, KafkaPublisherConfig
from webhooks.app import CMS_ROUTE, create_app
from webhooks.config import WebhookConfig
from webhooks.serve import serve

log = structlog.get_logger(__name__)

# Room for what the change event adds to the payload (received_at, field names).
_EVENT_OVERHEAD_BYTES = 64 * 1024


def build_config(settings: Settings) -> WebhookConfig:
    if not settings.webhook_secrets:
        raise click.ClickException(
            "no webhook secret configured: set POLICY_INDEXER_WEBHOOK_SECRETS='[\"<secret>\"]'"
        )
    try:
        return WebhookConfig(
            secrets=tuple(s.get_secret_value().encode("utf-8") for s in settings.webhook_secrets),
            timestamp_tolerance_seconds=settings.webhook_timestamp_tolerance_seconds,
            max_body_bytes=settings.webhook_max_body_bytes,
            retry_after_seconds=settings.webhook_retry_after_seconds,
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc


@click.command()
@click.pass_obj
def webhook(settings: Settings) -> None:
    """Serve POST /webhooks/cms, /healthz, /readyz and /metrics."""
    config = build_config(settings)
    publisher = KafkaEventPublisher(
        KafkaPublisherConfig(
            bootstrap_servers=settings.kafka_bootstrap_servers,
            topic=settings.kafka_topic,
            timeout_seconds=settings.webhook_publish_timeout_seconds,
            max_message_bytes=settings.webhook_max_body_bytes + _EVENT_OVERHEAD_BYTES,
        )
    )
    app = create_app(config, publisher, CollectorRegistry())
    log.info("webhook receiver starting", host=settings.webhook_host, port=settings.webhook_port,
             route=CMS_ROUTE, topic=settings.kafka_topic, secrets=len(config.secrets))
    try:
        serve(app, settings.webhook_host, settings.webhook_port)
    finally:
        publisher.close()
        log.info("webhook receiver stopped")
