"""The webhook holds under a hostile network (loopback, bounded).

A real uvicorn server (``webhooks.serve``, the configuration of every server the
project runs) with short limits so the test stays short. Against it, at once:

- 150 clients sending the request headers one byte every 0.2 s (slowloris),
- 50 clients sending complete headers, then the body one byte every 0.2 s,
- 100 clients that connect and send nothing,

300 connections against a cap of 200. Meanwhile a valid signed webhook is sent
every 50 ms, each on a new connection: every one must be answered 202 within
its client timeout. Afterwards the server has closed every hostile
connection: the slow-header and idle ones by the header deadline, the
slow-body ones by the body deadline (or the cap). The figures (connections
the server held at most, valid-request latency) are printed for the report:
``pytest -s tests/integration/test_webhook_hostile_network.py``.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from support.webhook_helpers import SECRET, MemoryPublisher, encode, payload, signed_headers

from foundation.http.limits import HttpLimits
from webhooks.app import create_app
from webhooks.config import WebhookConfig
from webhooks.serve import ServerThread

pytestmark = pytest.mark.slow

LIMITS = HttpLimits(header_timeout_s=2.0, body_timeout_s=3.0, keep_alive_s=2.0,
                    max_connections=200)
SLOW_HEADERS, SLOW_BODIES, IDLE = 150, 50, 100
DRIP_EVERY_S = 0.2
ATTACK_S = 8.0  # longer than both deadlines: each hostile client must have been cut off
CLIENT_TIMEOUT_S = 5.0


@dataclass
class Attacker:
    url_port: int
    sockets: dict[str, list[socket.socket]] = field(default_factory=dict)
    closed_after: dict[str, list[float]] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def connect(self, kind: str, n: int, first: bytes) -> None:
        made = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", self.url_port), timeout=5)
            if first:
                s.sendall(first)
            s.setblocking(False)
            made.append(s)
        self.sockets[kind] = made
        self.closed_after[kind] = []

    def run(self) -> None:
        started = time.monotonic()
        open_ = {kind: list(socks) for kind, socks in self.sockets.items()}
        while not self.stop.is_set() and any(open_.values()):
            for kind, socks in open_.items():
                for s in list(socks):
                    if self._closed_by_server(s, drip=kind != "idle"):
                        socks.remove(s)
                        self.closed_after[kind].append(time.monotonic() - started)
            self.stop.wait(DRIP_EVERY_S)

    @staticmethod
    def _closed_by_server(s: socket.socket, *, drip: bool) -> bool:
        try:
            if s.recv(4096) == b"":
                return True
        except BlockingIOError:
            pass
        except OSError:
            return True
        if drip:
            try:
                s.send(b"x")
            except BlockingIOError:
                pass
            except OSError:
                return True
        return False

    def close(self) -> None:
        for socks in self.sockets.values():
            for s in socks:
                s.close()


def held(connections: set[Any]) -> int:
    """Connections the server holds open (one being closed holds no slot), read from the
    test's thread while the server's loop changes the set: retried when it changed."""
    while True:
        try:
            return sum(1 for c in list(connections) if not c.transport.is_closing())
        except RuntimeError:  # "Set changed size during iteration"
            continue


def test_valid_webhooks_are_served_while_slow_and_idle_clients_are_cut_off() -> None:
    publisher = MemoryPublisher()
    app = create_app(WebhookConfig(secrets=(SECRET,)), publisher, CollectorRegistry())
    with ServerThread(app, limits=LIMITS) as server:
        connections = server._server.server_state.connections
        attacker = Attacker(server.port)
        try:
            attacker.connect("slow-headers", SLOW_HEADERS,
                             b"POST /webhooks/cms HTTP/1.1\r\nHost: x\r\nX-Drip: ")
            # Signed and typed, so the receiver reads the body (it answers 401/415 before).
            sig = signed_headers(b"{" + b"x" * 99_999, at=time.time())["Policy-Signature"]
            body_headers = (b"POST /webhooks/cms HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Type: application/json\r\nContent-Length: 100000\r\n"
                            b"Policy-Signature: " + sig.encode() + b"\r\n\r\n{")
            attacker.connect("slow-body", SLOW_BODIES, body_headers)
            attacker.connect("idle", IDLE, b"")
            thread = threading.Thread(target=attacker.run, daemon=True)
            thread.start()
            held_at_most = 0
            latencies: list[float] = []
            statuses: list[int] = []
            started = time.monotonic()
            n = 0
            while time.monotonic() - started < ATTACK_S:
                held_at_most = max(held_at_most, held(connections))
                data = payload(id=f"hostile/doc-{n}", version=n + 1)
                body = encode(data)
                sent = time.perf_counter()
                answer = httpx.post(f"{server.url}/webhooks/cms", content=body,
                                    headers=signed_headers(body, at=time.time()),
                                    timeout=CLIENT_TIMEOUT_S)
                latencies.append(time.perf_counter() - sent)
                statuses.append(answer.status_code)
                n += 1
                time.sleep(0.05)
            thread.join(timeout=LIMITS.body_timeout_s + 5)
            cut = {kind: len(times) for kind, times in attacker.closed_after.items()}
            latest = {kind: max(times, default=0.0)
                      for kind, times in attacker.closed_after.items()}
        finally:
            attacker.stop.set()
            attacker.close()
    p50 = statistics.median(latencies)
    p99 = sorted(latencies)[int(len(latencies) * 0.99) - 1]
    print(f"\nhostile connections opened: {SLOW_HEADERS} slow-header, {SLOW_BODIES} slow-body, "
          f"{IDLE} idle; server held at most {held_at_most} connections (cap "
          f"{LIMITS.max_connections}); cut off: {cut}; last cut after (s): "
          f"{ {k: round(v, 2) for k, v in latest.items()} }; valid requests: {len(latencies)}, "
          f"all {set(statuses)}, latency p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
          f"max {max(latencies) * 1000:.1f} ms")
    assert set(statuses) == {202}, statuses
    assert len(publisher.events) == len(statuses)
    assert max(latencies) < CLIENT_TIMEOUT_S
    # +1: read from another thread, the newcomer can be seen before the evicted one closes.
    assert held_at_most <= LIMITS.max_connections + 1
    assert cut == {"slow-headers": SLOW_HEADERS, "slow-body": SLOW_BODIES, "idle": IDLE}, cut
    # Each kind was cut off by its deadline (plus one drip period), not at the end of the run.
    assert latest["slow-headers"] <= LIMITS.header_timeout_s + 1.0, latest
    assert latest["idle"] <= LIMITS.header_timeout_s + 1.0, latest
    assert LIMITS.body_timeout_s - 0.5 <= latest["slow-body"] <= LIMITS.body_timeout_s + 1.0, (
        latest)
