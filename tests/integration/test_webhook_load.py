"""A bounded load run: concurrent clients mixing valid and invalid webhooks for a while.

Afterwards Kafka must hold exactly one event per 202 answer, and none of any
refused request. Not a speed test: bench/bench_webhook.py measures speed.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter

import httpx
import pytest
from prometheus_client import CollectorRegistry
from support.kafka_topics import MAX_MESSAGE_BYTES, read_topic, temporary_topic
from support.webhook_helpers import OLD_SECRET, SECRET, encode, payload

from transport.kafka_producer import KafkaEventPublisher, KafkaPublisherConfig
from webhooks import signature
from webhooks.app import create_app
from webhooks.config import WebhookConfig
from webhooks.serve import ServerThread

pytestmark = [pytest.mark.services, pytest.mark.slow]

CLIENTS = 30
SECONDS = 10.0
KINDS = ["valid"] * 7 + ["bad-signature", "invalid-payload", "wrong-content-type"]
EXPECTED = {"valid": 202, "bad-signature": 401, "invalid-payload": 422,
            "wrong-content-type": 415}


def _request(kind: str, n: int) -> tuple[str, bytes, dict[str, str]]:
    data = payload(id=f"load/doc-{n % 50}", version=n + 1)
    data["event_id"] = f"{kind}-{n}"
    if kind == "invalid-payload":
        data["document"]["version"] = -n
    body = encode(data)
    secret = OLD_SECRET if kind == "bad-signature" else SECRET
    headers = {
        "Content-Type": "text/plain" if kind == "wrong-content-type" else "application/json",
        signature.HEADER: signature.sign([secret], int(time.time()), body),
    }
    return data["event_id"], body, headers


async def _load(url: str) -> dict[str, list[tuple[str, int]]]:
    answers: dict[str, list[tuple[str, int]]] = {kind: [] for kind in EXPECTED}
    counter = iter(range(10**9))
    deadline = time.monotonic() + SECONDS
    limits = httpx.Limits(max_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:

        async def one_client(seed: int) -> None:
            rng = random.Random(seed)
            while time.monotonic() < deadline:
                kind = rng.choice(KINDS)
                event_id, body, headers = _request(kind, next(counter))
                r = await client.post("/webhooks/cms", content=body, headers=headers)
                answers[kind].append((event_id, r.status_code))

        await asyncio.gather(*(one_client(seed) for seed in range(CLIENTS)))
    return answers


def test_under_load_every_202_is_exactly_one_event_and_no_refusal_is_any(
    kafka_bootstrap: str, unique: str
) -> None:
    publisher = KafkaEventPublisher(KafkaPublisherConfig(
        bootstrap_servers=kafka_bootstrap, topic=unique, max_message_bytes=MAX_MESSAGE_BYTES))
    app = create_app(WebhookConfig(secrets=(SECRET,)), publisher, CollectorRegistry())
    try:
        with temporary_topic(kafka_bootstrap, unique) as topic, ServerThread(app) as server:
            answers = asyncio.run(_load(server.url))
            in_kafka = Counter(event.event_id for _, event in read_topic(kafka_bootstrap, topic))
    finally:
        publisher.close()

    statuses = {kind: Counter(status for _, status in got) for kind, got in answers.items()}
    assert statuses == {kind: Counter({EXPECTED[kind]: len(got)}) for kind, got in
                        answers.items()}, statuses
    accepted = {event_id for event_id, status in answers["valid"] if status == 202}
    assert len(accepted) > 100, f"too little load to mean anything: {statuses}"
    assert set(in_kafka) == accepted
    assert max(in_kafka.values()) == 1
