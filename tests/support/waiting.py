"""Waiting in tests: poll a condition until it holds, or fail loudly at the deadline.

A loop that simply ends at its deadline lets the test go on as if the condition
had held, and the failure (if any) shows up later, far from its cause. Every
wait in the suite goes through ``wait_until`` instead: it returns the first
value the probe gives that is accepted (truthy, or what ``accept`` says), and
when the time is up it raises an ``AssertionError`` that says what it waited
for, for how long, and the last value the probe returned (or the exception it
raised)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T],
    timeout_s: float,
    what: str,
    *,
    every_s: float = 0.05,
    accept: Callable[[T], object] = bool,
    retry_on: tuple[type[BaseException], ...] = (),
    on_timeout: Callable[[], str] | None = None,
) -> T:
    """Call ``probe`` every ``every_s`` seconds until ``accept`` holds for what it returned
    (by default: until it is truthy); return that value.

    ``retry_on``: exceptions that mean "not yet" (a server still starting); any
    other exception propagates at once. ``on_timeout``: extra diagnostics for
    the error (a process's log tail), called only when the wait has failed.
    """
    deadline = time.monotonic() + timeout_s
    last: object = None
    while True:
        try:
            value = probe()
        except retry_on as exc:
            last = exc
        else:
            if accept(value):
                return value
            last = value
        if time.monotonic() >= deadline:
            extra = f"; {on_timeout()}" if on_timeout is not None else ""
            raise AssertionError(
                f"timed out after {timeout_s:g} s waiting for {what}; last seen: {last!r}{extra}"
            )
        time.sleep(every_s)
