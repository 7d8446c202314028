"""A tiny CMS that serves the JSON API ``sources.cms`` reads, over real HTTP.

Tests change ``documents`` (id -> record) and ``fail_with`` (a status every
request gets) while it runs; ``requests`` records what was asked, headers too.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar


@dataclass
class FakeCms:
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    fail_with: int | None = None
    raw_listing: bytes | None = None
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    url: str = ""

    def page(self, limit: int, cursor: str | None) -> dict[str, Any]:
        ids = sorted(self.documents)
        start = int(cursor) if cursor else 0
        chunk = ids[start : start + limit]
        listed = [{k: v for k, v in self.documents[i].items() if k != "content"} for i in chunk]
        following = start + limit
        more = following < len(ids)
        return {"documents": listed, "next_cursor": str(following) if more else None}


CmsT = TypeVar("CmsT", bound=FakeCms)


@contextmanager
def serve_cms(cms: CmsT) -> Iterator[CmsT]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return None

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            cms.requests.append((self.path, dict(self.headers.items())))
            if cms.fail_with is not None:
                self._send(cms.fail_with, b'{"error": "planned"}')
                return
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            if url.path == "/documents":
                if cms.raw_listing is not None:
                    self._send(200, cms.raw_listing)
                    return
                page = cms.page(int(query.get("limit", "500")), query.get("cursor"))
                self._send(200, json.dumps(page).encode())
                return
            document_id = urllib.parse.unquote(url.path.removeprefix("/documents/"))
            record = cms.documents.get(document_id)
            if record is None or record.get("deleted"):
                self._send(404, b'{"error": "not found"}')
                return
            self._send(200, json.dumps(record).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    cms.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield cms
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
