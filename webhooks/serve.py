"""Serving the app with uvicorn: in the foreground (the command) or in a thread (tests, bench)."""

from __future__ import annotations

import socket
import threading
import time
from types import TracebackType

import uvicorn
from starlette.types import ASGIApp


def server_config(app: ASGIApp, host: str, port: int) -> uvicorn.Config:
    # Our own structured logs say what happened; uvicorn's access log would repeat it.
    return uvicorn.Config(
        app, host=host, port=port, log_config=None, access_log=False, lifespan="on",
        server_header=False, timeout_graceful_shutdown=10,
    )


def serve(app: ASGIApp, host: str, port: int) -> None:
    """Serve until SIGINT/SIGTERM, finishing requests in flight."""
    uvicorn.Server(server_config(app, host, port)).run()


class ServerThread:
    """A real uvicorn server on a free loopback port, in a daemon thread::

        with ServerThread(app) as server:
            httpx.post(server.url + "/webhooks/cms", ...)
    """

    def __init__(self, app: ASGIApp, host: str = "127.0.0.1") -> None:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, 0))
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self._server = uvicorn.Server(server_config(app, host, self.port))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]},
            name=f"uvicorn-{self.port}", daemon=True,
        )

    def start(self, timeout: float = 10.0) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start on {self.url} within {timeout}s")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)
        self._socket.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
