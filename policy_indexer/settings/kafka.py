"""Kafka: the brokers, the topics and how every client connects to them.

Every producer, consumer and admin client the project creates uses these
(``runtime.connections.KafkaConnection``); ``topics create`` makes the topics
with the partitions and replicas set here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, Field, SecretStr, model_validator


class KafkaSettings(BaseModel):
    """The kafka section of ``Settings``."""

    kafka_bootstrap_servers: str = Field(
        "127.0.0.1:9092", description="Comma-separated host:port list of Kafka brokers."
    )
    kafka_topic: str = Field("policy.document-changes", min_length=1)
    kafka_dead_letter_topic: str = Field("policy.document-changes.dead-letter", min_length=1)
    kafka_group_id: str = Field("policy-indexer", min_length=1)
    kafka_partitions: int = Field(
        3, ge=1, description="Partitions of the change topic when `run` or `replay` creates it."
    )
    kafka_session_timeout_ms: int = Field(
        10000, ge=1000, description="How soon the group notices a dead worker (broker min 6000)."
    )
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        "PLAINTEXT", description="PLAINTEXT locally; SASL_SSL (or SSL) on a managed cluster."
    )
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = Field(
        None, description="Required with SASL_*: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512."
    )
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    kafka_sasl_password_file: Path | None = Field(
        None, description="The SASL password in a file (a mounted secret)."
    )
    kafka_ca_file: Path | None = Field(
        None, description="PEM CA bundle the brokers' certificates are checked against "
        "(default: the system's)."
    )
    kafka_cert_file: Path | None = Field(None, description="PEM client certificate (mTLS).")
    kafka_key_file: Path | None = Field(None, description="PEM private key of kafka_cert_file.")
    kafka_key_password: SecretStr | None = None
    kafka_key_password_file: Path | None = None
    kafka_ssl_check_hostname: bool = Field(
        True, description="Check that a broker's certificate names the host connected to."
    )
    kafka_replication_factor: int = Field(
        1, ge=1, le=32, description="Replicas of the topics `topics create` makes: 1 suits one "
        "local broker; 3 on a cluster."
    )
    kafka_min_insync_replicas: int = Field(
        1, ge=1, le=32, description="min.insync.replicas of the topics: 1 locally; 2 on a "
        "cluster with replication factor 3 (acks=all then survives one broker down)."
    )

    @model_validator(mode="after")
    def _kafka_rules(self) -> Self:
        sasl = self.kafka_security_protocol.startswith("SASL_")
        if sasl and not (self.kafka_sasl_mechanism and self.kafka_sasl_username
                         and self.kafka_sasl_password):
            raise ValueError(
                f"kafka_security_protocol {self.kafka_security_protocol} needs "
                "kafka_sasl_mechanism, kafka_sasl_username and kafka_sasl_password(_file)"
            )
        if (self.kafka_cert_file is None) != (self.kafka_key_file is None):
            raise ValueError("kafka_cert_file and kafka_key_file go together")
        if self.kafka_min_insync_replicas > self.kafka_replication_factor:
            raise ValueError(
                f"kafka_min_insync_replicas {self.kafka_min_insync_replicas} is above "
                f"kafka_replication_factor {self.kafka_replication_factor}: no write would "
                "ever be acknowledged"
            )
        return self
