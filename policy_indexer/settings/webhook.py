"""The webhook receiver: where it listens, its HMAC secrets, what it accepts and how
long it waits for the queue (``webhooks.config.WebhookConfig`` holds the defaults)."""

from __future__ import annotations

from pydantic import BaseModel, Field, SecretStr

from webhooks.config import MAX_BODY_BYTES, RETRY_AFTER_SECONDS, TIMESTAMP_TOLERANCE_SECONDS


class WebhookSettings(BaseModel):
    """The webhook section of ``Settings``."""

    webhook_host: str = "127.0.0.1"
    webhook_port: int = Field(8080, ge=0, le=65535)
    webhook_secrets: list[SecretStr] = Field(
        default_factory=list,
        max_length=2,
        description="HMAC-SHA256 secrets as a JSON list, at least 16 bytes each: one, or two "
        'while rotating (POLICY_INDEXER_WEBHOOK_SECRETS=\'["new...", "old..."]\').',
    )
    webhook_timestamp_tolerance_seconds: float = Field(
        TIMESTAMP_TOLERANCE_SECONDS, gt=0,
        description="A signature older or newer than this is refused (replays)."
    )
    webhook_max_body_bytes: int = Field(MAX_BODY_BYTES, ge=1024)
    webhook_publish_timeout_seconds: float = Field(
        5.0, gt=0, le=120, description="How long a request waits for Kafka's acks=all before 503."
    )
    webhook_retry_after_seconds: int = Field(
        RETRY_AFTER_SECONDS, ge=1, description="Retry-After sent with a 503."
    )
