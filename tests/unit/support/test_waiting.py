"""``wait_until``: returns what the probe found, fails loudly with what it last saw."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from support.waiting import wait_until


def test_returns_the_first_truthy_value_the_probe_gives() -> None:
    values = iter([0, None, "", 7, 8])
    assert wait_until(lambda: next(values), 5, "a number", every_s=0) == 7


def test_accept_decides_and_the_last_value_is_what_the_error_shows() -> None:
    counts = iter([1, 3, 5, 9])
    assert wait_until(lambda: next(counts), 5, "5 states", every_s=0, accept=lambda n: n >= 5) == 5
    with pytest.raises(AssertionError, match=r"waiting for 5 states; last seen: 2$"):
        wait_until(lambda: 2, 0.05, "5 states", every_s=0.01, accept=lambda n: n >= 5)


def test_at_the_deadline_it_fails_naming_what_it_waited_for_and_the_last_value() -> None:
    counter = itertools.count()
    with pytest.raises(AssertionError, match=r"waiting for the lag to reach 0; last seen: 0") as e:
        wait_until(lambda: next(counter) * 0, 0.05, "the lag to reach 0", every_s=0.01,
                   on_timeout=lambda: "worker log: idle")
    assert "worker log: idle" in str(e.value)


def test_retried_exceptions_mean_not_yet_and_are_reported_when_time_is_up() -> None:
    attempts: Iterator[ConnectionError | str] = iter(
        [ConnectionError("refused"), ConnectionError("refused"), "up"])

    def probe() -> str:
        got = next(attempts)
        if isinstance(got, Exception):
            raise got
        return got

    assert wait_until(probe, 5, "the server", every_s=0, retry_on=(ConnectionError,)) == "up"

    def never() -> str:
        raise ConnectionError("still refused")

    with pytest.raises(AssertionError, match="still refused"):
        wait_until(never, 0.05, "the server", every_s=0.01, retry_on=(ConnectionError,))


def test_an_exception_it_was_not_told_to_retry_propagates_at_once() -> None:
    def probe() -> int:
        raise ValueError("bad probe")

    with pytest.raises(ValueError, match="bad probe"):
        wait_until(probe, 5, "anything", retry_on=(ConnectionError,))
