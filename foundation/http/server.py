"""Serving an ASGI app with uvicorn: in the foreground (``serve``) or in a thread.

Every server the project runs (the webhook receiver, the search server, each
process's metrics and probes server) is built by ``server_config``, which
holds it to ``HttpLimits`` under a hostile network (slow or endless headers
and bodies, too many connections). uvicorn closes idle keep-alive connections
and can answer 503 above a concurrency limit, but it has no header or body
read timeout: a client sending one header byte a second, or a body a byte at a
time, held its connection (and a file descriptor) forever. ``GuardedH11``, a
small subclass of uvicorn's h11 protocol, adds them:

- **headers**: from the connection's first moment (or the end of the previous
  response) the request's headers must be complete within
  ``header_timeout_s``, else the connection is closed; an idle connection that
  never sends a byte goes the same way;
- **body**: from the end of the headers the whole body must arrive within
  ``body_timeout_s``; the app then sees a disconnect (the receiver answers as
  for a client that left);
- **connections**: at most ``max_connections`` at once; one more closes the
  one that has waited longest for its headers (a slow or idle client), so
  such clients cannot hold every slot against real ones, and if none waits
  for headers the newcomer is closed. uvicorn's ``limit_concurrency`` (the same
  number) answers 503 to requests beyond it;
- **keep-alive**: an idle connection is closed after ``keep_alive_s``.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from foundation.http.limits import HttpLimits


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with header and body read deadlines and a connection cap."""

    limits = HttpLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_headers_since: float | None = None
        self._watched_cycle: object | None = None

    @classmethod
    def with_limits(cls, limits: HttpLimits) -> type[GuardedH11]:
        return type(cls.__name__, (cls,), {"limits": limits})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # A transport being closed (an eviction in flight) holds no slot any more.
        held = sum(1 for c in self.connections if not c.transport.is_closing())
        if held > self.limits.max_connections and not self._evict_one():
            transport.close()
            return
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self._between_requests():
            self._await_headers()  # the first byte of a next request on a kept-alive connection
        super().data_received(data)
        self._follow_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # arms uvicorn's keep-alive timeout
        self._cancel()
        self._waiting_headers_since = time.monotonic()  # idle: the first to go at the cap

    # -- the deadlines ---------------------------------------------------------
    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _await_headers(self) -> None:
        self._cancel()
        self._waiting_headers_since = time.monotonic()
        self._deadline = self.loop.call_later(self.limits.header_timeout_s, self._timed_out,
                                              "headers")

    def _follow_request(self) -> None:
        cycle = self.cycle
        if cycle is None or (cycle is self._watched_cycle and self._deadline is None):
            return
        if cycle is not self._watched_cycle:  # the headers of a new request are in
            self._watched_cycle = cycle
            self._cancel()
            if cycle.more_body:
                self._deadline = self.loop.call_later(self.limits.body_timeout_s,
                                                      self._timed_out, "body")
        elif not cycle.more_body:  # the body is complete
            self._cancel()

    def _cancel(self) -> None:
        self._waiting_headers_since = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self, phase: str) -> None:
        self._deadline = None
        self._waiting_headers_since = None
        if not self.transport.is_closing():
            self.logger.warning("closing a connection: the request %s took longer than %ss",
                                phase, self.limits.header_timeout_s if phase == "headers"
                                else self.limits.body_timeout_s)
            self.transport.close()

    def _evict_one(self) -> bool:
        """Close the connection that has waited longest for headers; False if none waits."""
        waiting = [c for c in self.connections if isinstance(c, GuardedH11)
                   and c is not self and c._waiting_headers_since is not None
                   and not c.transport.is_closing()]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c._waiting_headers_since or 0.0)
        oldest._cancel()
        oldest.transport.close()
        return True


def server_config(
    app: ASGIApp, host: str, port: int, limits: HttpLimits | None = None
) -> uvicorn.Config:
    """The one uvicorn configuration of every server the project runs (see the module)."""
    limits = limits or HttpLimits()
    # Our own structured logs say what happened; uvicorn's access log would repeat it.
    return uvicorn.Config(
        app, host=host, port=port, log_config=None, access_log=False, lifespan="on",
        server_header=False, timeout_graceful_shutdown=10,
        http=GuardedH11.with_limits(limits), timeout_keep_alive=int(limits.keep_alive_s) or 1,
        limit_concurrency=limits.max_connections + 1,
    )


def serve(app: ASGIApp, host: str, port: int, limits: HttpLimits | None = None) -> None:
    """Serve until SIGINT/SIGTERM, finishing requests in flight."""
    uvicorn.Server(server_config(app, host, port, limits)).run()


class ServerNotStarted(RuntimeError):
    """The server thread did not start serving in time (it has been stopped)."""


class ServerThread:
    """An app served by uvicorn in a daemon thread, on its own event loop::

        with ServerThread(app) as server:
            httpx.post(server.url + "/webhooks/cms", ...)

    The socket is bound here (``port`` 0: a free one), so an address in use is an
    ``OSError`` at once and ``port`` is known before ``start``. ``start`` waits until
    uvicorn serves, else stops it and raises ``ServerNotStarted``. uvicorn's own
    signal handlers are not installed off the main thread: whoever owns the thread
    stops it (the runtime's supervisor, a test).
    """

    def __init__(
        self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0, *,
        limits: HttpLimits | None = None, name: str | None = None,
    ) -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((host, port))
        except OSError:
            self._socket.close()
            raise
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self.name = name or f"uvicorn {self.port}"
        self._server = uvicorn.Server(server_config(app, host, self.port, limits))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]},
            name=self.name.replace(" ", "-"), daemon=True,
        )

    def start(self, timeout: float = 10.0) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
        if not self._server.started:
            self.stop()
            raise ServerNotStarted(f"{self.name} did not start on {self.url} within {timeout}s")
        return self

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._socket.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
