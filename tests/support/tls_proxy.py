"""A TLS-terminating reverse proxy with HTTP basic auth, in front of the shared Elasticsearch.

The minimal Elasticsearch distribution has no security module, so the tests put
this in front of it to play a secured cluster: TLS with a certificate of the
test's own CA, and basic auth answered as Elasticsearch security answers it
(401, ``WWW-Authenticate: Basic realm="security"``, a ``security_exception``
body). Our own (threads + ``ssl``, about 200 lines) rather than Debian's nginx:
it needs no root or package, a fixture starts and stops it in-process, and it
counts what it saw (requests, refusals, handshakes that failed) for the tests
to assert on.

HTTP/1.1 is forwarded as it comes: several requests per connection
(keep-alive, to one upstream connection of its own), bodies with
``Content-Length`` or ``Transfer-Encoding: chunked`` (decoded, sent upstream
with their length), ``HEAD`` answered with the upstream's headers and no body.
``Authorization`` and the hop-by-hop headers are not forwarded.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import http.client
import json
import socket
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "transfer-encoding", "upgrade", "authorization", "content-length", "host",
})
MAX_LINE = 65536
HANDSHAKE_TIMEOUT_S = 10.0
UNAUTHORIZED_HEADERS = (("WWW-Authenticate", 'Basic realm="security", charset="UTF-8"'),)


class BadRequest(Exception):
    """The client sent something that is not HTTP/1.1 as we forward it."""


@dataclass
class ProxyCounts:
    """What the proxy saw; read by the tests (under ``lock``)."""

    connections: int = 0
    handshake_failures: int = 0
    forwarded: int = 0
    refused: int = 0
    chunked_bodies: int = 0
    methods: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes
    chunked: bool

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    @property
    def keep_alive(self) -> bool:
        connection = (self.header("connection") or "").lower()
        return "close" not in connection and self.version == "HTTP/1.1"


class TlsAuthProxy:
    """``https://127.0.0.1:<port>`` -> ``http://<upstream>``, for ``username``/``password``."""

    def __init__(self, upstream: tuple[str, int], cert_chain: Path, key: Path, *,
                 username: str, password: str) -> None:
        self.upstream = upstream
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(cert_chain), str(key))
        self._credentials = (username.encode(), password.encode())
        self.counts = ProxyCounts()
        self.lock = threading.Lock()
        self._closed = threading.Event()
        self._open: set[socket.socket] = set()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self._thread = threading.Thread(target=self._accept, name="tls-proxy", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self.listener.close()
        with self.lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            self._open.clear()
        self._thread.join(timeout=5)

    def __enter__(self) -> TlsAuthProxy:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- connections -------------------------------------------------------
    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        with self.lock:
            self.counts.connections += 1
            self._open.add(raw)
        raw.settimeout(HANDSHAKE_TIMEOUT_S)
        try:
            conn = self.context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            with self.lock:
                self.counts.handshake_failures += 1
                self._open.discard(raw)
            raw.close()
            return
        conn.settimeout(None)
        with self.lock:  # the wrapped socket now owns the descriptor
            self._open.discard(raw)
            self._open.add(conn)
        upstream = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            with conn, conn.makefile("rb") as reader:
                self._loop(conn, reader, upstream)
        except (OSError, BadRequest, http.client.HTTPException):
            pass  # the client went away or spoke something else: drop the connection
        finally:
            upstream.close()
            with self.lock:
                self._open.discard(conn)

    def _loop(self, conn: ssl.SSLSocket, reader: BinaryIO,
              upstream: http.client.HTTPConnection) -> None:
        while not self._closed.is_set():
            request = read_request(reader)
            if request is None:
                return  # the client closed the connection between requests
            with self.lock:
                self.counts.methods.append(request.method)
                self.counts.chunked_bodies += request.chunked
            if not self._authorized(request.header("authorization")):
                with self.lock:
                    self.counts.refused += 1
                conn.sendall(unauthorized(request))
            else:
                conn.sendall(self._forward(request, upstream))
                with self.lock:
                    self.counts.forwarded += 1
            if not request.keep_alive:
                return

    def _authorized(self, header: str | None) -> bool:
        scheme, _, encoded = (header or "").partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, sep, password = base64.b64decode(encoded, validate=True).partition(b":")
        except (binascii.Error, ValueError):
            return False
        want_user, want_password = self._credentials
        # both compared, always: no early exit telling a valid user from a wrong password
        ok_user = hmac.compare_digest(user, want_user)
        ok_password = hmac.compare_digest(password, want_password)
        return bool(sep) and ok_user and ok_password

    def _forward(self, request: Request, upstream: http.client.HTTPConnection) -> bytes:
        headers = {k: v for k, v in request.headers if k.lower() not in HOP_BY_HOP}
        headers["Host"] = f"{self.upstream[0]}:{self.upstream[1]}"
        body = request.body if (request.body or request.method in ("POST", "PUT")) else None
        upstream.request(request.method, request.target, body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        lines = [f"HTTP/1.1 {response.status} {response.reason}"]
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP or (request.method == "HEAD"
                                                 and key.lower() == "content-length"):
                lines.append(f"{key}: {value}")
        if request.method != "HEAD":
            lines.append(f"Content-Length: {len(data)}")
        if not request.keep_alive:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data


def unauthorized(request: Request) -> bytes:
    """What Elasticsearch security answers to missing or wrong credentials."""
    user = "anonymous"
    scheme, _, encoded = (request.header("authorization") or "").partition(" ")
    if scheme.lower() == "basic":
        with contextlib.suppress(binascii.Error, ValueError):
            user = base64.b64decode(encoded).partition(b":")[0].decode("utf-8", "replace")
    reason = f"unable to authenticate user [{user}] for REST request [{request.target}]"
    body = json.dumps({
        "error": {"root_cause": [{"type": "security_exception", "reason": reason}],
                  "type": "security_exception", "reason": reason},
        "status": 401,
    }).encode()
    head = ["HTTP/1.1 401 Unauthorized", *(f"{k}: {v}" for k, v in UNAUTHORIZED_HEADERS),
            "Content-Type: application/json", "X-elastic-product: Elasticsearch"]
    if request.method != "HEAD":
        head.append(f"Content-Length: {len(body)}")
    else:
        head.append("Content-Length: 0")
        body = b""
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def _line(reader: BinaryIO) -> bytes:
    line = reader.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise BadRequest("line too long")
    return line


def read_request(reader: BinaryIO) -> Request | None:
    """One HTTP/1.1 request with its whole body; None at a clean end of the connection."""
    first = _line(reader)
    if not first:
        return None
    parts = first.decode("latin-1").rstrip("\r\n").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"not an HTTP/1.x request line: {first[:80]!r}")
    method, target, version = parts
    headers: list[tuple[str, str]] = []
    while True:
        line = _line(reader).decode("latin-1").rstrip("\r\n")
        if not line:
            break
        key, sep, value = line.partition(":")
        if not sep:
            raise BadRequest(f"not a header line: {line[:80]!r}")
        headers.append((key.strip(), value.strip()))
    lowered = {k.lower(): v for k, v in headers}
    chunked = "chunked" in lowered.get("transfer-encoding", "").lower()
    if chunked:
        body = _read_chunked(reader)
    else:
        length = int(lowered.get("content-length", "0") or "0")
        body = reader.read(length) if length else b""
        if len(body) != length:
            raise BadRequest("body shorter than its Content-Length")
    return Request(method, target, version, headers, body, chunked)


def _read_chunked(reader: BinaryIO) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = _line(reader).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError as exc:
            raise BadRequest(f"bad chunk size {size_line[:20]!r}") from exc
        if size == 0:
            while _line(reader).strip():  # trailers, up to the blank line
                pass
            return b"".join(parts)
        chunk = reader.read(size)
        if len(chunk) != size or _line(reader).strip():
            raise BadRequest("chunk shorter than its size")
        parts.append(chunk)
