"""What the receiver needs to know, as plain values (the command builds it from settings)."""

from __future__ import annotations

from dataclasses import dataclass

MIN_SECRET_BYTES = 16
# The receiver's defaults, here once (settings and the adapters reuse them).
TIMESTAMP_TOLERANCE_SECONDS = 300.0
MAX_BODY_BYTES = 10 * 1024 * 1024
RETRY_AFTER_SECONDS = 5


@dataclass(frozen=True)
class WebhookConfig:
    secrets: tuple[bytes, ...]
    timestamp_tolerance_seconds: float = TIMESTAMP_TOLERANCE_SECONDS
    max_body_bytes: int = MAX_BODY_BYTES
    retry_after_seconds: int = RETRY_AFTER_SECONDS
    # Publishes waiting for the queue at once; beyond it the receiver answers 503 at once.
    max_pending_publishes: int = 64
    # The queue events go to, as the 503s and logs name it: "Kafka", or "the local queue"
    # in the embedded mode (the runtime says which).
    queue_name: str = "the queue"

    def __post_init__(self) -> None:
        if not 1 <= len(self.secrets) <= 2:
            raise ValueError(
                f"webhook secrets: need 1 or 2 (2 during a rotation), got {len(self.secrets)}"
            )
        for index, secret in enumerate(self.secrets):
            if len(secret) < MIN_SECRET_BYTES:
                raise ValueError(
                    f"webhook secret #{index + 1} is {len(secret)} bytes; "
                    f"need at least {MIN_SECRET_BYTES}"
                )
        if self.max_body_bytes < 1:
            raise ValueError(f"max_body_bytes={self.max_body_bytes} must be positive")
        if self.max_pending_publishes < 1:
            raise ValueError(f"max_pending_publishes={self.max_pending_publishes} must be positive")

