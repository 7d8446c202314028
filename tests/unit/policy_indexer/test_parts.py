"""The supervisor: start order, reverse stop order, a dead required part, signals."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from policy_indexer.runtime.parts import (
    CallbackPart,
    PartDied,
    Supervisor,
    ThreadPart,
    stop_on_signals,
)


def loop_part(name: str, log: list[str], *, fail: bool = False) -> ThreadPart:
    stop = threading.Event()

    def run() -> None:
        log.append(f"run {name}")
        if fail:
            raise RuntimeError(f"{name} broke")
        stop.wait(30)

    def request_stop() -> None:
        log.append(f"stop {name}")
        stop.set()

    return ThreadPart(name, run, request_stop, stop_timeout_s=5)


def test_parts_stop_in_reverse_order_of_start_even_when_one_fails_to_stop() -> None:
    log: list[str] = []

    def broken_stop() -> None:
        log.append("stop broken")
        raise OSError("already closed")

    with Supervisor() as parts:
        parts.start(loop_part("worker", log))
        parts.add_stop("broken", broken_stop)
        parts.start(loop_part("webhook", log))
    stops = [entry for entry in log if entry.startswith("stop")]
    assert stops == ["stop webhook", "stop broken", "stop worker"]


def test_a_required_part_that_dies_ends_the_run_naming_it_and_why() -> None:
    log: list[str] = []
    with Supervisor(poll_s=0.01) as parts:
        parts.start(loop_part("worker", log))
        parts.start(loop_part("monitor", log, fail=True))
        with pytest.raises(PartDied, match=r"the monitor ended: RuntimeError\('monitor broke'\)"):
            parts.run_until_stopped()
    assert "stop worker" in log


def test_a_part_that_is_not_required_may_end() -> None:
    done = ThreadPart("progress", lambda: None, lambda: None)
    with Supervisor(poll_s=0.01) as parts:
        parts.start(done, required=False)
        threading.Timer(0.2, parts.request_stop).start()
        parts.run_until_stopped()  # returns on the request, no PartDied


def test_sigterm_stops_the_run_and_the_previous_handler_comes_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    part = CallbackPart("idle", lambda: None)
    with Supervisor(poll_s=0.01) as parts:
        parts.start(part)
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        parts.run_until_stopped()
        assert parts.stop_requested.is_set()
    assert signal.getsignal(signal.SIGTERM) is before


def test_signals_are_left_alone_outside_the_main_thread() -> None:
    seen: list[object] = []

    def in_thread() -> None:
        with stop_on_signals(seen.append):
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join(5)
    assert seen == [before]
