from __future__ import annotations

import pytest

from consumers.errors import Interrupted
from consumers.retry import HealthState, RetryPolicy, call_with_retry
from store.errors import StoreError, TransientStoreError


def test_transient_failures_are_retried_with_growing_capped_waits() -> None:
    health = HealthState()
    waits: list[float] = []
    seen_retrying: list[bool] = []
    calls = iter([TransientStoreError("down")] * 6 + [None])

    def flaky() -> str:
        exc = next(calls)
        if exc is not None:
            raise exc
        return "done"

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        seen_retrying.append(health.retrying)

    policy = RetryPolicy(initial_s=0.1, max_s=1.0, jitter_s=0.0)
    assert call_with_retry(flaky, policy=policy, health=health, sleep=sleep) == "done"
    assert waits == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert all(seen_retrying)
    assert not health.retrying


def test_other_errors_are_not_retried_and_stop_ends_the_wait() -> None:
    health = HealthState()

    def broken() -> None:
        raise StoreError("a bug, not an outage")

    with pytest.raises(StoreError):
        call_with_retry(broken, policy=RetryPolicy(), health=health, sleep=lambda s: None)

    def down() -> None:
        raise TransientStoreError("down")

    def stop(_seconds: float) -> None:
        raise Interrupted("stop requested")

    with pytest.raises(Interrupted):
        call_with_retry(down, policy=RetryPolicy(), health=health, sleep=stop)
    assert not health.retrying
