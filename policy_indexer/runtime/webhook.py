"""The webhook receiver built from settings: its config, its app, its process."""

from __future__ import annotations

import structlog
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette

from policy_indexer.runtime.backends import KafkaBackends
from policy_indexer.settings import Settings
from transport.publisher import EventPublisher
from webhooks.app import CMS_ROUTE, create_app
from webhooks.config import WebhookConfig
from webhooks.serve import serve

log = structlog.get_logger(__name__)


class WebhookNotConfigured(ValueError):
    """No secret, or a secret that cannot be used; the message says which setting."""


def webhook_config(settings: Settings) -> WebhookConfig:
    if not settings.webhook_secrets:
        raise WebhookNotConfigured(
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
        raise WebhookNotConfigured(str(exc)) from exc


def webhook_app(
    settings: Settings, publisher: EventPublisher, registry: CollectorRegistry
) -> Starlette:
    return create_app(webhook_config(settings), publisher, registry)


def serve_webhook(settings: Settings) -> None:
    """``policy-indexer webhook``: the receiver in the foreground, publishing to Kafka.

    Kafka may be down at start: the receiver still starts, answers 503 (with
    Retry-After) and ``/readyz`` 503 until it can reach the broker.
    """
    config = webhook_config(settings)
    publisher = KafkaBackends.publisher_for(settings)
    app = create_app(config, publisher, CollectorRegistry())
    log.info("webhook receiver starting", host=settings.webhook_host, port=settings.webhook_port,
             route=CMS_ROUTE, topic=settings.kafka_topic, secrets=len(config.secrets))
    try:
        serve(app, settings.webhook_host, settings.webhook_port)
    finally:
        publisher.close()
        log.info("webhook receiver stopped")
