"""The ``Part`` protocol, and the supervisor that owns every part's life.

A part is anything a process runs beside its main thread: a worker loop, a
server, a watcher, a monitor, a scheduler, a child process. The supervisor
starts parts in order, watches that the required ones stay alive, handles
SIGTERM and SIGINT in one place, and stops the parts in reverse order of start
(each stop is bounded by the part itself), so producers stop before the
consumer that drains what they produced::

    with Supervisor() as parts:
        parts.start(worker)          # stopped last
        parts.start(webhook)         # stopped first
        parts.run_until_stopped()    # returns on a signal; raises PartDied

Errors::

    PartError       a part could not start (the message says which and why)
    PartDied        a required part ended while the process was running
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Protocol

import structlog

log = structlog.get_logger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class PartError(Exception):
    """A part could not start; the message says which and why."""


class PartDied(Exception):
    """A required part ended while the process was running."""

    def __init__(self, name: str, error: BaseException | None) -> None:
        why = repr(error) if error is not None else "it stopped"
        super().__init__(f"the {name} ended: {why}")
        self.name = name
        self.error = error


class Part(Protocol):
    @property
    def name(self) -> str: ...

    def start(self) -> None:
        """Start, and return once the part is running (or raise ``PartError``)."""

    def stop(self) -> None:
        """Ask the part to stop and wait for it, for a bounded time."""

    def alive(self) -> bool: ...

    @property
    def error(self) -> BaseException | None:
        """The exception that ended the part, if any."""


class ThreadPart:
    """``run`` in a daemon thread; ``request_stop`` makes it return; the thread is joined."""

    def __init__(
        self,
        name: str,
        run: Callable[[], None],
        request_stop: Callable[[], None],
        *,
        stop_timeout_s: float = 10.0,
        after_stop: Callable[[], None] | None = None,
        required: bool = True,
    ) -> None:
        self._name = name
        self.required = required  # False: the process goes on without it (the runner reads it)
        self._run = run
        self._request_stop = request_stop
        self._stop_timeout_s = stop_timeout_s
        self._after_stop = after_stop
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)

    @property
    def name(self) -> str:
        return self._name

    @property
    def error(self) -> BaseException | None:
        return self._error

    def _main(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # handed to the supervisor, which decides
            log.error("part failed", part=self._name, error=repr(exc))
            self._error = exc

    def start(self) -> None:
        self._thread.start()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._request_stop()
        if self._thread.is_alive() or self._thread.ident is not None:
            self._thread.join(self._stop_timeout_s)
        if self._thread.is_alive():
            log.warning("part did not stop in time", part=self._name,
                        timeout_s=self._stop_timeout_s)
        elif self._after_stop is not None:
            self._after_stop()


class CallbackPart:
    """A part started elsewhere (a library's own thread): only its stop and liveness."""

    def __init__(self, name: str, stop: Callable[[], None],
                 alive: Callable[[], bool] = lambda: True,
                 error: Callable[[], BaseException | None] = lambda: None) -> None:
        self._name, self._stop, self._alive, self._error = name, stop, alive, error

    @property
    def name(self) -> str:
        return self._name

    @property
    def error(self) -> BaseException | None:
        return self._error()

    def start(self) -> None:
        return None

    def alive(self) -> bool:
        return self._alive()

    def stop(self) -> None:
        self._stop()


@contextmanager
def stop_on_signals(on_signal: Callable[[str], None]) -> Iterator[None]:
    """SIGTERM/SIGINT call ``on_signal(name)`` while inside; the previous handlers come back."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        on_signal(signal.Signals(signum).name)

    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only (tests run commands in threads)
        return
    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class Supervisor:
    """Starts parts, watches the required ones, stops them all in reverse order."""

    def __init__(self, *, poll_s: float = 0.5) -> None:
        self._poll_s = poll_s
        self._parts: list[tuple[Part, bool]] = []
        self.stop_requested = threading.Event()

    def start(self, part: Part, *, required: bool = True) -> Part:
        """Start ``part`` now and stop it (before the ones started earlier) on exit."""
        part.start()
        self._parts.append((part, required))
        return part

    def add_stop(self, name: str, stop: Callable[[], None]) -> None:
        """Something to undo on exit, in the same reverse order (a file to close)."""
        self._parts.append((CallbackPart(name, stop), False))

    def request_stop(self, why: str = "requested") -> None:
        if not self.stop_requested.is_set():
            log.info("stop requested", signal=why)
        self.stop_requested.set()

    def check(self) -> None:
        """Raise ``PartDied`` for the first required part that ended."""
        for part, required in self._parts:
            if required and not part.alive():
                raise PartDied(part.name, part.error)

    def run_until_stopped(self) -> None:
        """Until SIGTERM/SIGINT or ``request_stop``; ``PartDied`` when a required part ends."""
        with stop_on_signals(self.request_stop):
            while not self.stop_requested.wait(self._poll_s):
                self.check()
        log.info("stopping")

    def stop_all(self) -> None:
        while self._parts:
            part, _required = self._parts.pop()
            try:
                part.stop()
            except Exception as exc:  # one part's failure to stop must not strand the rest
                log.error("part failed to stop", part=part.name, error=repr(exc))

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_all()
