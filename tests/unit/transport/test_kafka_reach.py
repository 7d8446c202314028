from __future__ import annotations

from dataclasses import dataclass

from transport.kafka_reach import GROUP, METRIC, CoordinatorWatch


@dataclass
class Clock:
    now: float = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Consumer:
    """What the watch reads of a kafka-python consumer: its metrics."""

    heartbeat_ago: float | None

    def metrics(self) -> dict[str, dict[str, float]]:
        return {} if self.heartbeat_ago is None else {GROUP: {METRIC: self.heartbeat_ago}}


def test_kafka_is_away_once_the_heartbeat_is_older_than_the_session_timeout() -> None:
    clock, consumer = Clock(), Consumer(heartbeat_ago=1.0)
    watch = CoordinatorWatch(consumer, limit_s=6.0, clock=clock)
    clock.now += 60
    assert watch.away() is None
    consumer.heartbeat_ago = 6.5
    reason = watch.away()
    assert reason is not None and "no heartbeat" in reason and "6 s" in reason
    consumer.heartbeat_ago = 0.2
    assert watch.away() is None


def test_joining_is_not_an_outage_but_a_broker_down_at_start_up_is() -> None:
    clock, consumer = Clock(), Consumer(heartbeat_ago=float("inf"))  # none sent yet
    watch = CoordinatorWatch(consumer, limit_s=6.0, clock=clock)
    clock.now += 3
    assert watch.away() is None
    clock.now += 4
    assert watch.away() is not None


def test_a_consumer_without_the_metric_is_never_called_away() -> None:
    watch = CoordinatorWatch(Consumer(heartbeat_ago=None), limit_s=0.0)
    assert watch.silence_s() is None and watch.away() is None
