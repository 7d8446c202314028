"""Kafka goes away and comes back: 503 meanwhile, nothing half-published, then success.

The broker stopped here is a second one this test starts for itself (same
runner as deploy/local/services, own ports and folder); the shared broker on
:9092 is never touched.
"""

from __future__ import annotations

import gc
import logging
import time

import httpx
import pytest
from prometheus_client import CollectorRegistry
from support.kafka_topics import MAX_MESSAGE_BYTES, read_topic, temporary_topic
from support.own_broker import OwnBroker
from support.waiting import wait_until
from support.webhook_helpers import SECRET, encode, payload

from transport.kafka_producer import KafkaEventPublisher, KafkaPublisherConfig
from webhooks import signature
from webhooks.app import create_app
from webhooks.config import WebhookConfig
from webhooks.serve import ServerThread

pytestmark = [
    pytest.mark.services,
    pytest.mark.slow,
    # kafka-python 3.0 leaks the socket of each refused reconnect while the broker is down;
    # they are collected (gc.collect below) and ignored inside this test only.
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
]

def _post(url: str, data: dict[str, object]) -> httpx.Response:
    body = encode(data)
    headers = {"Content-Type": "application/json",
               signature.HEADER: signature.sign([SECRET], int(time.time()), body)}
    return httpx.post(f"{url}/webhooks/cms", content=body, headers=headers, timeout=30)


def test_kafka_down_means_503_and_nothing_published_then_the_same_requests_succeed(
    own_broker: OwnBroker, unique: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Kafka's connection-refused records hold the leaked sockets alive past this test.
    caplog.set_level(logging.CRITICAL, logger="kafka")
    bootstrap = own_broker.bootstrap
    publisher = KafkaEventPublisher(KafkaPublisherConfig(
        bootstrap_servers=bootstrap, topic=unique, timeout_seconds=2,
        max_message_bytes=MAX_MESSAGE_BYTES, reconnect_interval_seconds=0.5,
    ))
    app = create_app(WebhookConfig(secrets=(SECRET,)), publisher, CollectorRegistry())
    before = payload(id="outage/before")
    during = [payload(id=f"outage/during-{i}") for i in range(3)]
    try:
        with temporary_topic(bootstrap, unique, partitions=1), ServerThread(app) as server:
            assert _post(server.url, before).status_code == 202

            own_broker.services("down")
            for data in during:
                response = _post(server.url, data)
                assert response.status_code == 503, response.text
                assert response.headers["Retry-After"] == "5"
            assert httpx.get(f"{server.url}/readyz", timeout=10).status_code == 503

            own_broker.services("up")
            # Nothing of the refused requests reached Kafka, not even later on its own.
            assert [e.event_id for _, e in read_topic(bootstrap, unique)] == [before["event_id"]]

            wait_until(lambda: httpx.get(f"{server.url}/readyz", timeout=10).status_code, 60,
                       "the receiver to be ready again", every_s=0.5,
                       accept=lambda code: code == 200)
            for data in during:  # the CMS retries the same events
                response = _post(server.url, data)
                assert response.status_code == 202, response.text

            events = [e.event_id for _, e in read_topic(bootstrap, unique)]
            assert events == [before["event_id"]] + [d["event_id"] for d in during]
    finally:
        publisher.close()
        del app, publisher  # then collect kafka-python's leaked sockets inside this test
        gc.collect()
