"""Health probes: each answers True only when the service can do real work."""

from __future__ import annotations

import json
import socket
import struct
import urllib.error
import urllib.request


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _kafka_request(sock: socket.socket, api_key: int, api_version: int, body: bytes) -> bytes:
    client_id = b"policy-indexer-services"
    header = struct.pack(">hhih", api_key, api_version, 7, len(client_id)) + client_id
    payload = header + body
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    size = struct.unpack(">i", _recv_exact(sock, 4))[0]
    return _recv_exact(sock, size)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("connection closed mid-response")
        data += chunk
    return data


def kafka_ready(host: str, port: int) -> bool:
    """The broker answers a Metadata request (v4) and names at least one broker."""
    return kafka_brokers(host, port) > 0


def kafka_brokers(host: str, port: int) -> int:
    """How many brokers the broker on ``port`` names in a Metadata answer (0: no answer)."""
    try:
        with socket.create_connection((host, port), timeout=2.0) as sock:
            sock.settimeout(3.0)
            # Metadata v4: topics = null (all), allow_auto_topic_creation = false.
            response = _kafka_request(sock, 3, 4, struct.pack(">ib", -1, 0))
    except OSError:
        return 0
    # correlation_id (int32), throttle_time_ms (int32), brokers array length (int32)
    if len(response) < 12:
        return 0
    _corr, _throttle, brokers = struct.unpack(">iii", response[:12])
    return max(0, brokers)


def http_json(url: str, timeout: float = 3.0) -> object:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (loopback URL)
        return json.loads(resp.read())


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=3.0) as resp:  # noqa: S310
            return 200 <= resp.status < 300
    except (OSError, urllib.error.URLError):
        return False


def elasticsearch_ready(host: str, port: int) -> bool:
    try:
        health = http_json(f"http://{host}:{port}/_cluster/health")
    except (OSError, urllib.error.URLError, ValueError):
        return False
    return isinstance(health, dict) and health.get("status") in ("green", "yellow")
