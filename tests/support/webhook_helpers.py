"""Helpers for the webhook receiver's tests: an in-memory publisher, payloads, signed headers."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from events.model import ChangeEvent
from transport.publisher import PublishError
from webhooks import signature

SECRET = b"whsec_unit_test_primary_0001"
OLD_SECRET = b"whsec_unit_test_previous_002"
NOW = 1_764_446_400.0


class MemoryPublisher:
    """An ``EventPublisher`` that keeps events in a list, or fails as told."""

    def __init__(self) -> None:
        self.events: list[ChangeEvent] = []
        self.fail_with: PublishError | None = None
        self.is_ready = True
        self.gate: threading.Event | None = None  # publish waits on it when set
        self.entered = threading.Event()  # set when a publish has started

    def publish(self, event: ChangeEvent) -> None:
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail_with is not None:
            raise self.fail_with
        self.events.append(event)

    def ready(self) -> bool:
        return self.is_ready

    def close(self) -> None:
        pass


def payload(event_type: str = "document.published", **document: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": "refunds/late-delivery",
        "version": 3,
        "title": "Refunds for late deliveries",
        "path": "policies/refunds/late-delivery.md",
        "content_type": "text/markdown",
        "content": "# Refunds\n\nSECRET-CONTENT-MARKER: refund the delivery fee.\n",
        "metadata": {"scope": ["city:berlin"], "access_labels": ["agents"],
                     "valid_from": "2026-12-01", "keywords": ["refund"]},
    }
    if event_type == "document.deleted":
        doc = {"id": doc["id"], "version": doc["version"] + 1}
    doc.update(document)
    return {
        "payload_version": 1,
        "event_id": f"evt-{time.monotonic_ns()}",
        "event_type": event_type,
        "occurred_at": "2026-11-29T18:04:05Z",
        "document": doc,
    }


def signed_headers(
    body: bytes, secrets: tuple[bytes, ...] = (SECRET,), at: float = NOW
) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        signature.HEADER: signature.sign(secrets, int(at), body),
    }


def encode(data: dict[str, Any]) -> bytes:
    return json.dumps(data).encode("utf-8")

