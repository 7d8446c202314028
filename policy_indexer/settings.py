"""The one place configuration is read.

Every setting comes from the environment with the prefix ``POLICY_INDEXER_``
(``POLICY_INDEXER_KAFKA_BOOTSTRAP_SERVERS=...``) or from a ``.env`` file, and
can be handed a plain dict in tests: ``Settings(**{"kafka_topic": "t"})``.
Core packages never read settings; the command line passes values down.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Typed configuration of every policy-indexer process."""

    model_config = SettingsConfigDict(
        env_prefix="POLICY_INDEXER_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="forbid",
        frozen=True,
    )

    # Transport ---------------------------------------------------------
    kafka_bootstrap_servers: str = Field(
        "127.0.0.1:9092", description="Comma-separated host:port list of Kafka brokers."
    )
    kafka_topic: str = Field("policy.document-changes", min_length=1)
    kafka_dead_letter_topic: str = Field("policy.document-changes.dead-letter", min_length=1)
    kafka_group_id: str = Field("policy-indexer", min_length=1)

    # Store -------------------------------------------------------------
    elasticsearch_url: str = Field("http://127.0.0.1:9200")
    elasticsearch_api_key: SecretStr | None = None
    index_prefix: str = Field(
        "policy", pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Prefix of every index and alias."
    )

    # Observability -----------------------------------------------------
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(9464, ge=0, le=65535)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "console"] = "json"
