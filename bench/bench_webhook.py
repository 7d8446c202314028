"""Accepted webhooks per second and time to 202, beside the ceiling of the same server.

One uvicorn server process serves three endpoints side by side:

- ``/webhooks/cms``        the receiver, publishing to Kafka with acks=all (what we ship)
- ``/bench/checks-only``   the same receiver with a publisher that stores nothing
                           (signature, size, validation, no Kafka)
- ``/bench/ceiling``       reads the body and answers 202 (HTTP + uvicorn alone)

A load process keeps ``--concurrency`` keep-alive connections busy on each
endpoint in turn for ``--seconds`` and prints requests/s, p50 and p99 time to
202, and each figure as a ratio of the ceiling. Every request must be answered
202; the Kafka run then checks the topic holds exactly one event per 202.

    .venv/bin/python bench/bench_webhook.py [--concurrency 32] [--seconds 10]
        [--bootstrap 127.0.0.1:9092] [--content-bytes 4000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from prometheus_client import CollectorRegistry
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from events.model import ChangeEvent
from policy_indexer.logs import configure_logging
from transport.kafka_producer import KafkaEventPublisher, KafkaPublisherConfig
from webhooks import signature
from webhooks.app import create_app
from webhooks.config import WebhookConfig
from webhooks.metrics import WebhookMetrics
from webhooks.receiver import CmsWebhookReceiver
from webhooks.serve import serve as run_server

SECRET = b"whsec_bench_secret_0123456789"
ROUTES = ("/bench/ceiling", "/bench/checks-only", "/webhooks/cms")


def serve(port: int, bootstrap: str, topic: str) -> None:
    class NullPublisher:
        def publish(self, event: ChangeEvent) -> None:
            pass

        def ready(self) -> bool:
            return True

        def close(self) -> None:
            pass

    async def ceiling(request: Request) -> Response:
        await request.body()
        return Response(b'{"status":"accepted"}', status_code=202,
                        media_type="application/json")

    configure_logging("ERROR")
    config = WebhookConfig(secrets=(SECRET,))
    checks_only = CmsWebhookReceiver(config, NullPublisher(),
                                     WebhookMetrics.create(CollectorRegistry()))
    publisher = KafkaEventPublisher(KafkaPublisherConfig(bootstrap_servers=bootstrap,
                                                         topic=topic))
    app = create_app(config, publisher, CollectorRegistry(), extra_routes=[
        Route("/bench/ceiling", ceiling, methods=["POST"]),
        Route("/bench/checks-only", checks_only.handle, methods=["POST"]),
    ])
    try:
        run_server(app, "127.0.0.1", port)
    finally:
        publisher.close()


def build_request(route: str, content_bytes: int, n: int) -> bytes:
    body = json.dumps({
        "payload_version": 1,
        "event_id": f"bench-{route.rsplit('/', 1)[1]}-{n}",
        "event_type": "document.updated",
        "occurred_at": "2026-11-29T18:04:05Z",
        "document": {
            "id": f"bench/doc-{n % 100}", "version": n + 1, "title": "Bench policy",
            "content_type": "text/markdown",
            "content": "# Bench policy\n\n" + "policy text " * (content_bytes // 12),
            "metadata": {"scope": ["city:berlin"], "access_labels": ["agents"]},
        },
    }).encode()
    head = (f"POST {route} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"{signature.HEADER}: {signature.sign([SECRET], int(time.time()), body)}\r\n\r\n")
    return head.encode() + body


async def _one_connection(port: int, requests: list[bytes], deadline: float,
                          latencies: list[float], statuses: dict[int, int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    i = 0
    try:
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            writer.write(requests[i % len(requests)])
            i += 1
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1
    finally:
        writer.close()


async def load(port: int, route: str, concurrency: int, seconds: float,
               content_bytes: int) -> dict[str, float]:
    per_conn = 200
    requests = [[build_request(route, content_bytes, c * per_conn + k) for k in range(per_conn)]
                for c in range(concurrency)]
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    await asyncio.gather(*(_one_connection(port, requests[c], deadline, latencies, statuses)
                           for c in range(concurrency)))
    elapsed = time.perf_counter() - started
    if set(statuses) != {202}:
        raise SystemExit(f"{route}: not every answer was 202: {statuses}")
    q = statistics.quantiles(latencies, n=100)
    return {"count": len(latencies), "per_s": len(latencies) / elapsed,
            "p50_ms": q[49] * 1000, "p99_ms": q[98] * 1000}


def count_events(bootstrap: str, topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        ends = consumer.end_offsets(parts)
        consumer.assign(parts)
        consumer.seek_to_beginning(*parts)
        start = {tp: consumer.position(tp) for tp in parts}
        return sum(ends[tp] - start[tp] for tp in parts)
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--content-bytes", type=int, default=4000)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.bootstrap, args.topic)
        return

    topic = f"bench-webhook-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), "--bootstrap", args.bootstrap,
         "--topic", topic],
        cwd=Path(__file__).resolve().parents[1], env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), 0.1).close()
                break
            except OSError:
                time.sleep(0.1)
        warm_up = asyncio.run(load(port, "/webhooks/cms", 4, 1.0, args.content_bytes))
        results = {route: asyncio.run(load(port, route, args.concurrency, args.seconds,
                                           args.content_bytes)) for route in ROUTES}
        events = count_events(args.bootstrap, topic)
    finally:
        server.terminate()
        server.wait(30)
        admin.delete_topics([topic])
        admin.close()

    ceiling = results["/bench/ceiling"]
    print(f"\nconcurrency {args.concurrency}, {args.seconds:.0f} s per endpoint, "
          f"content {args.content_bytes} B, one uvicorn process, loopback, {os.cpu_count()} cores")
    print(f"{'endpoint':22} {'202/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'x ceiling 202/s':>16}")
    for route, r in results.items():
        print(f"{route:22} {r['per_s']:8.0f} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} "
              f"{r['per_s'] / ceiling['per_s']:16.2f}")
    accepted = int(results["/webhooks/cms"]["count"] + warm_up["count"])
    verdict = "exactly one per 202" if events == accepted else "MISMATCH"
    print(f"Kafka holds {events} events for {accepted} 202s of /webhooks/cms: {verdict}")
    if events != accepted:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
