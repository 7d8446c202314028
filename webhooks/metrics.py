"""Every metric of the webhook receiver, declared once, on a registry passed in.

- ``policy_indexer_webhook_requests_total{route,status}`` (counter): requests answered.
- ``policy_indexer_webhook_signature_failures_total{reason}`` (counter): 401s by reason:
  missing, malformed, stale, mismatch.
- ``policy_indexer_webhook_publish_seconds{outcome}`` (histogram): from handing an event
  to Kafka to its acks=all verdict; outcome ok, unavailable or rejected.
- ``policy_indexer_webhook_payload_bytes`` (histogram): size of bodies read.
- ``policy_indexer_webhook_events_accepted_total{action}`` (counter): events Kafka
  acknowledged and answered 202.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram

from foundation.metric_names import NAMESPACE

SUBSYSTEM = "webhook"

_PUBLISH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_SIZE_BUCKETS = tuple(float(2**n) for n in range(8, 25, 2))  # 256 B .. 16 MiB


@dataclass(frozen=True)
class WebhookMetrics:
    requests: Counter
    signature_failures: Counter
    publish_seconds: Histogram
    payload_bytes: Histogram
    events_accepted: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> WebhookMetrics:
        ns = {"namespace": NAMESPACE, "subsystem": SUBSYSTEM}
        return cls(
            requests=Counter(
                "requests", "HTTP requests answered, by route and status.",
                ["route", "status"], registry=registry, **ns,
            ),
            signature_failures=Counter(
                "signature_failures", "Requests refused with 401, by reason.",
                ["reason"], registry=registry, **ns,
            ),
            publish_seconds=Histogram(
                "publish_seconds", "Time from handing an event to Kafka to its acks=all verdict.",
                ["outcome"], buckets=_PUBLISH_BUCKETS, registry=registry, **ns,
            ),
            payload_bytes=Histogram(
                "payload_bytes", "Size of webhook bodies read.",
                buckets=_SIZE_BUCKETS, registry=registry, **ns,
            ),
            events_accepted=Counter(
                "events_accepted", "Events acknowledged by Kafka and answered 202, by action.",
                ["action"], registry=registry, **ns,
            ),
        )
