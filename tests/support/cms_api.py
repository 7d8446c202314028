"""A CMS read API of the test's own, over real HTTP on loopback.

It answers recorded-shape responses (Contentful's Delivery API entry, Sanity's
``/data/doc``, Strapi's ``/api/<plural>/<documentId>``) from ``routes`` (path
-> (status, JSON)); anything else is a 404. ``requests`` records each path
with its query and headers, so a test can check the token was sent.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeCmsApi:
    routes: dict[str, tuple[int, Any]] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    url: str = ""


@contextmanager
def serve_cms_api(api: FakeCmsApi) -> Iterator[FakeCmsApi]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return None

        def do_GET(self) -> None:
            api.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            status, answer = api.routes.get(self.path.partition("?")[0],
                                            (404, {"error": "not found"}))
            body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="fake-cms-api", daemon=True)
    thread.start()
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
