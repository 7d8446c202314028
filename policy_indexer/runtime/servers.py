"""ASGI apps served by uvicorn in a thread, as parts under the supervisor.

The supervisor owns the signals (uvicorn's own handlers are not installed off the
main thread), so a server process stops like every other one: SIGTERM, the parts
stop in reverse order, exit 0.
"""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from starlette.types import ASGIApp

from policy_indexer.runtime.parts import PartError
from webhooks.limits import HttpLimits
from webhooks.serve import server_config

STOP_TIMEOUT_S = 10.0


class UvicornThread:
    """An ASGI app served by uvicorn in a thread (its own event loop); a ``Part``."""

    error = None

    def __init__(self, name: str, app: ASGIApp, host: str, port: int, setting: str, *,
                 limits: HttpLimits | None = None) -> None:
        self.name = name
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((host, port))
        except OSError as exc:
            self._socket.close()
            raise PartError(f"{name} cannot listen on {host}:{port} ({setting}): {exc}") from exc
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self._server = uvicorn.Server(server_config(app, host, self.port, limits))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]},
            name=name.replace(" ", "-"), daemon=True,
        )

    def start(self, timeout_s: float = 10.0) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
        if not self._server.started:
            self.stop()
            raise PartError(f"{self.name} did not start on {self.url}")

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(STOP_TIMEOUT_S)
        self._socket.close()
