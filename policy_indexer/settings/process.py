"""What every process has: the pipeline it belongs to, its logs, its /metrics server and
its probes, the secrets directory and the language model's cache."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from policy_indexer.runtime.probes import ProbePolicy


class ProcessSettings(BaseModel):
    """The process section of ``Settings``."""

    pipeline: Literal["embedded", "kafka"] = Field(
        "embedded",
        description="'kafka': Kafka + Elasticsearch workers; 'embedded': one process.",
    )
    secrets_dir: Path | None = Field(
        None, description="A directory of secret files, one per setting, each named as its "
        "variable (POLICY_INDEXER_ELASTICSEARCH_PASSWORD), as Kubernetes mounts a Secret. "
        "Read from the environment only.",
    )
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(9464, ge=0, le=65535)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "console"] = "json"
    readiness_grace_seconds: float = Field(
        60.0, ge=0,
        description="/readyz stays 200 this long while a process retries a dependency or "
        "its passes fail (the reason in the body), then 503; 0: 503 at once.",
    )
    liveness_heartbeat_seconds: float | None = Field(
        180.0, gt=0,
        description="/healthz is 503 when the worker loop has not turned for this long "
        "(a stuck loop, restarted by the orchestrator); unset: not judged.",
    )
    language_model_cache_dir: Path | None = Field(
        default_factory=lambda: Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "policy-indexer",
        description="Where the language detector's model is kept uncompressed (68 MB), so a "
        "process maps it in ~0.01 s, not ~1.4 s; unset it (empty) for none. An unwritable "
        "place is logged and the packaged model loaded each time.",
    )

    @field_validator("language_model_cache_dir", mode="before")
    @classmethod
    def _empty_is_no_cache(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    def probe_policy(self) -> ProbePolicy:
        """How /readyz and /healthz judge a process's health (runtime.probes)."""
        return ProbePolicy(readiness_grace_s=self.readiness_grace_seconds,
                           heartbeat_timeout_s=self.liveness_heartbeat_seconds)
