"""ASGI apps served by uvicorn in a thread, as parts under the supervisor.

The supervisor owns the signals (uvicorn's own handlers are not installed off the
main thread), so a server process stops like every other one: SIGTERM, the parts
stop in reverse order, exit 0. The thread itself is ``foundation.http.server``'s
``ServerThread``; a part says its failures as ``PartError``, naming the setting.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp

from foundation.http.limits import HttpLimits
from foundation.http.server import ServerNotStarted, ServerThread
from policy_indexer.runtime.parts import PartError

STOP_TIMEOUT_S = 10.0


class UvicornThread:
    """An ASGI app served by uvicorn in a thread (its own event loop); a ``Part``."""

    error = None

    def __init__(self, name: str, app: ASGIApp, host: str, port: int, setting: str, *,
                 limits: HttpLimits | None = None,
                 after_stop: Callable[[], None] | None = None) -> None:
        self.name = name
        self._after_stop = after_stop  # what the app's handlers used (a publisher), closed last
        try:
            self._server = ServerThread(app, host, port, limits=limits, name=name)
        except OSError as exc:
            raise PartError(f"{name} cannot listen on {host}:{port} ({setting}): {exc}") from exc
        self.port: int = self._server.port
        self.url = self._server.url

    def start(self, timeout_s: float = 10.0) -> None:
        try:
            self._server.start(timeout_s)
        except ServerNotStarted as exc:
            raise PartError(f"{self.name} did not start on {self.url}") from exc

    def alive(self) -> bool:
        return self._server.alive()

    def stop(self) -> None:
        try:
            self._server.stop(STOP_TIMEOUT_S)
        finally:
            if self._after_stop is not None:
                self._after_stop()
