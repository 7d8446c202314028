"""The ``overloaded`` 503 names the queue the events wait
for: the local queue in the embedded mode (it said "waiting for Kafka" there), Kafka in
the Kafka mode. The receiver's config is the one the runtime builds from the settings."""

from __future__ import annotations

import dataclasses
import threading

import anyio
import httpx
import pytest
from prometheus_client import CollectorRegistry
from support.webhook_helpers import NOW, SECRET, MemoryPublisher, encode, payload, signed_headers

from policy_indexer.runtime.webhook import webhook_config
from policy_indexer.settings import Settings
from webhooks.app import create_app


@pytest.mark.parametrize(("pipeline", "queue"), [("embedded", "the local queue"),
                                                 ("kafka", "Kafka")])
def test_the_overloaded_answer_names_the_queue_of_the_mode(pipeline: str, queue: str) -> None:
    settings = Settings(pipeline=pipeline, webhook_secrets=[SECRET.decode()])
    config = dataclasses.replace(webhook_config(settings), max_pending_publishes=1)
    publisher = MemoryPublisher()
    publisher.gate = threading.Event()
    app = create_app(config, publisher, CollectorRegistry(), clock=lambda: NOW)
    body = encode(payload())

    async def scenario() -> tuple[int, httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            statuses: list[int] = []
            async with anyio.create_task_group() as tg:
                async def first() -> None:
                    answer = await client.post("/webhooks/cms", content=body,
                                               headers=signed_headers(body))
                    statuses.append(answer.status_code)

                tg.start_soon(first)
                await anyio.to_thread.run_sync(publisher.entered.wait, 5)
                second = await client.post("/webhooks/cms", content=body,
                                           headers=signed_headers(body))
                assert publisher.gate is not None
                publisher.gate.set()
            return statuses[0], second

    first_status, second = anyio.run(scenario)
    assert (first_status, second.status_code) == (202, 503)
    answer = second.json()
    assert answer["error"] == "overloaded"
    assert answer["detail"] == f"too many events are waiting for {queue}; retry later"
    assert ("Kafka" in answer["detail"]) is (pipeline == "kafka")
    assert second.headers["Retry-After"] == "5"
