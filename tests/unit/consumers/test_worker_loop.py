"""The worker loop's consumer-group paths, on an in-memory ``EventConsumer`` (our interface).

Kafka runs these paths only under rebalances and outages (the integration tests
judge them on a real broker); here each is driven on purpose: a partition
assigned while the worker backs off is paused on arrival, a batch whose
partition was revoked meanwhile is left to its new owner, a refused commit is
dropped, a failed one retried, and a transport out of reach shows on the health.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry
from support.chunks import fake_chunker
from support.waiting import wait_until

from chunker.model import Chunk
from consumers.commit_policy import CommitPolicy
from consumers.dead_letter import DeadLetter
from consumers.retry import HealthState, RetryPolicy
from consumers.visibility import VisibilityPolicy
from consumers.worker import Worker
from events.model import Action, ChangeEvent
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from store.errors import StoreAccessError, StoreError, TransientStoreError
from store.memory import InMemoryStore
from transport.consumer import (
    CommitLost,
    ConsumeError,
    Delivery,
    Partition,
    Rebalance,
    ignore_rebalance,
)

P0, P1 = Partition("changes", 0), Partition("changes", 1)


def record(partition: Partition, offset: int, doc: str, version: int = 1) -> Delivery:
    event = ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc, action=Action.UPSERT, version=version,
        changed_at=datetime(2024, 1, 1, tzinfo=UTC), content_type="text/markdown",
        content=f"{doc} version {version}",
    )
    return Delivery(doc.encode(), event.to_json_bytes(), partition.topic, partition.number, offset)


class FakeConsumer:
    """A consumer group of one member, scripted by the test; thread-safe."""

    name = "fake"

    def __init__(self, records: Iterable[Delivery], assigned: Iterable[Partition]) -> None:
        self._lock = threading.Lock()
        self.records = sorted(records, key=lambda d: (d.source, d.offset))
        self.positions: dict[Partition, int] = {}
        self.committed: dict[Partition, int] = {}
        self.commits: list[dict[Partition, int]] = []
        self.initial = frozenset(assigned)
        self.assigned: frozenset[Partition] = frozenset()
        self.paused: set[Partition] = set()
        self.paused_on_arrival: set[Partition] = set()
        self.rebalances: list[tuple[frozenset[Partition], frozenset[Partition]]] = []
        self.commit_errors: list[ConsumeError] = []
        self.away: str | None = None
        self.polls_while_paused = 0
        self.on_assign: Rebalance = ignore_rebalance
        self.on_revoke: Rebalance = ignore_rebalance
        self.closed = threading.Event()
        self._idle = threading.Event()

    def subscribe(
        self, on_assign: Rebalance = ignore_rebalance, on_revoke: Rebalance = ignore_rebalance,
    ) -> None:
        self.on_assign, self.on_revoke = on_assign, on_revoke
        self.rebalances.append((frozenset(), self.initial))

    def add(self, delivery: Delivery) -> None:
        with self._lock:
            self.records.append(delivery)

    def rebalance(self, revoke: Iterable[Partition], assign: Iterable[Partition]) -> None:
        """Done inside the next ``poll``, as kafka-python does."""
        with self._lock:
            self.rebalances.append((frozenset(revoke), frozenset(assign)))

    def poll(self, max_records: int, timeout_s: float) -> list[Delivery]:
        with self._lock:
            pending, self.rebalances = self.rebalances, []
        for revoke, assign in pending:
            if revoke:
                self.on_revoke(revoke)
                self.assigned -= revoke
                self.paused -= revoke  # as in Kafka: a pause ends with the assignment
                for p in revoke:  # the next owner starts at the committed offset
                    self.positions[p] = self.committed.get(p, 0)
            if assign:
                self.assigned |= assign
                self.on_assign(assign)
                self.paused_on_arrival |= assign & self.paused
        if self.paused and self.paused >= self.assigned:
            self.polls_while_paused += 1
        with self._lock:
            out = [
                d for d in self.records
                if d.source in self.assigned and d.source not in self.paused
                and d.offset >= self.positions.get(d.source, 0)
            ][:max_records]
        for d in out:
            self.positions[d.source] = d.offset + 1
        if not out:
            self._idle.wait(min(timeout_s, 0.02))
        return out

    def assignment(self) -> frozenset[Partition]:
        return self.assigned

    def pause(self, partitions: Iterable[Partition]) -> None:
        self.paused |= set(partitions)

    def resume(self, partitions: Iterable[Partition]) -> None:
        self.paused -= set(partitions)

    def commit(self, deliveries: Sequence[Delivery]) -> None:
        if self.commit_errors:
            raise self.commit_errors.pop(0)
        offsets = {d.source: d.offset + 1 for d in deliveries}
        with self._lock:
            self.commits.append(offsets)
            self.committed.update(offsets)

    def backlog(self, delivery: Delivery) -> int | None:
        return None

    def unreachable(self) -> str | None:
        return self.away

    def close(self) -> None:
        self.closed.set()


class FlakyStore(InMemoryStore):
    """Chunk writes fail transiently while ``down`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.down = threading.Event()
        self.refused = 0

    def write_chunks(self, chunks: Sequence[Chunk]) -> int:
        if self.down.is_set():
            self.refused += 1
            raise TransientStoreError("the store is away")
        return super().write_chunks(chunks)


class Letters:
    def __init__(self) -> None:
        self.sent: list[DeadLetter] = []

    def send(self, letter: DeadLetter) -> None:
        self.sent.append(letter)


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def start(registry: CollectorRegistry) -> Iterator[Callable[..., Worker]]:
    threads: list[tuple[Worker, threading.Thread]] = []

    def run(consumer: FakeConsumer, store: InMemoryStore,
            health: HealthState | None = None) -> Worker:
        worker = Worker(
            consumer, Indexer(store, chunk=fake_chunker), Letters(),
            metrics=WorkerMetrics.create(registry),
            retry=RetryPolicy(initial_s=0.05, max_s=0.1, jitter_s=0.0),
            commit=CommitPolicy(max_records=1, max_interval_s=0.05),
            poll_timeout_s=0.02, health=health,
        )
        thread = threading.Thread(target=worker.run)
        thread.start()
        threads.append((worker, thread))
        return worker

    yield run
    for worker, thread in threads:
        worker.request_stop()
        thread.join(timeout=10)
        assert not thread.is_alive(), "the worker did not stop"


def test_a_partition_assigned_while_backing_off_is_paused_and_a_revoked_batch_is_dropped(
    start: Callable[..., Worker],
) -> None:
    store = FlakyStore()
    store.down.set()
    consumer = FakeConsumer([record(P0, 0, "refund"), record(P1, 0, "terms")], assigned={P0})
    start(consumer, store)
    wait_until(lambda: store.refused, 10, "the worker to fail on the store and back off")
    wait_until(lambda: consumer.polls_while_paused, 10, "the worker to poll with P0 paused")
    consumer.rebalance(revoke={P0}, assign={P1})  # P0 goes to another member meanwhile
    wait_until(lambda: consumer.assigned == {P1}, 10, "the rebalance to happen")
    assert consumer.paused_on_arrival == {P1}  # nothing of P1 handed out during the wait
    store.down.clear()
    wait_until(lambda: consumer.committed, 10, "a commit")
    # The batch of revoked P0 is the new owner's: never committed here, never indexed here.
    assert consumer.committed == {P1: 1}
    assert [r.document_id for r in store.iter_chunks()] == ["terms"]
    assert consumer.paused == set()


def test_a_commit_refused_after_a_rebalance_is_dropped_and_a_failed_one_retried(
    start: Callable[..., Worker], registry: CollectorRegistry,
) -> None:
    consumer = FakeConsumer([record(P0, 0, "refund")], assigned={P0})
    consumer.commit_errors = [CommitLost("the group moved on")]
    start(consumer, InMemoryStore())
    wait_until(lambda: not consumer.commit_errors, 10, "the refused commit")
    consumer.commit_errors = [ConsumeError("the broker is away")]
    consumer.add(record(P0, 1, "terms"))
    wait_until(lambda: consumer.committed, 10, "a commit to go through")
    assert consumer.commits == [{P0: 2}]  # the retried commit; the refused one left nothing
    assert registry.get_sample_value(
        "policy_indexer_transient_errors_total", {"operation": "fake"}
    ) == 1  # the failed commit; the refused one is no error of ours
    assert registry.get_sample_value("policy_indexer_offsets_committed_total") == 1


def test_a_transport_out_of_reach_shows_on_the_health_until_it_is_back(
    start: Callable[..., Worker], registry: CollectorRegistry,
) -> None:
    consumer = FakeConsumer([], assigned={P0})
    health = HealthState()
    start(consumer, InMemoryStore(), health=health)
    consumer.away = "fake: no heartbeat for 12 s"
    wait_until(lambda: health.kafka_unreachable, 10, "the worker to notice")
    assert health.kafka_unreachable == "fake: no heartbeat for 12 s"
    wait_until(lambda: registry.get_sample_value("policy_indexer_retrying"), 10,
               "policy_indexer_retrying to be 1", accept=lambda v: v == 1)
    assert registry.get_sample_value(
        "policy_indexer_transient_errors_total", {"operation": "fake"}
    ) == 1  # once per outage, not once per poll
    consumer.away = None
    wait_until(lambda: health.kafka_unreachable is None, 10, "the worker to see it back")
    wait_until(lambda: registry.get_sample_value("policy_indexer_retrying"), 10,
               "policy_indexer_retrying to be 0", accept=lambda v: v == 0)


def test_a_stop_while_backing_off_commits_what_is_done_and_closes(
    start: Callable[..., Worker],
) -> None:
    store = FlakyStore()
    consumer = FakeConsumer([record(P0, 0, "refund")], assigned={P0})
    worker = start(consumer, store)
    wait_until(lambda: consumer.committed, 10, "the first record to be committed")
    store.down.set()
    consumer.add(record(P0, 1, "terms"))
    wait_until(lambda: store.refused, 10, "the worker to back off on the second")
    worker.request_stop()
    assert consumer.closed.wait(10), "the worker did not close its consumer"
    assert consumer.committed == {P0: 1}  # the record in hand stays uncommitted


def test_the_loop_beats_while_it_backs_off_so_liveness_restarts_only_a_stuck_loop(
    start: Callable[..., Worker],
) -> None:
    """/healthz judges ``health.heartbeat`` (runtime.probes): a worker waiting for its
    store keeps turning (it polls its paused partitions), so it stays alive."""
    store = FlakyStore()
    store.down.set()
    health = HealthState()
    start(FakeConsumer([record(P0, 0, "refund")], assigned={P0}), store, health=health)
    wait_until(lambda: health.retrying, 10, "the worker to back off")
    first = wait_until(lambda: health.heartbeat, 10, "a heartbeat") or 0.0
    wait_until(lambda: health.heartbeat or 0.0, 10, "a later heartbeat while backing off",
               accept=lambda beat: beat > first and health.retrying)


class RefreshCountingStore(InMemoryStore):
    """Counts refreshes and notes which documents were written when each came."""

    def __init__(self, fail_with: Exception | None = None) -> None:
        super().__init__()
        self.refreshes: list[set[str]] = []
        self.fail_with = fail_with

    def refresh(self) -> None:
        self.refreshes.append({s.document_id for s in self.iter_states()})
        if self.fail_with is not None:
            raise self.fail_with


def run_to_the_end(consumer: FakeConsumer, store: InMemoryStore, registry: CollectorRegistry,
                   *, max_records: int, visibility: VisibilityPolicy) -> None:
    worker = Worker(
        consumer, Indexer(store, chunk=fake_chunker), Letters(),
        metrics=WorkerMetrics.create(registry), visibility=visibility,
        commit=CommitPolicy(max_records=1, max_interval_s=0.05),
        max_records=max_records, poll_timeout_s=0.02,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        wait_until(lambda: consumer.committed.get(P0) == len(consumer.records), 10,
                   "the worker to commit every record")
    finally:
        worker.request_stop()
        thread.join(timeout=10)
    assert not thread.is_alive(), "the worker did not stop"


def test_a_caught_up_worker_refreshes_after_its_short_batch_and_a_busy_one_does_not(
    registry: CollectorRegistry,
) -> None:
    # Five records, two a poll: two full batches (a backlog: no refresh), then a short
    # one (caught up: a refresh, after its chunks and states are written).
    consumer = FakeConsumer([record(P0, i, f"doc-{i}") for i in range(5)], assigned={P0})
    store = RefreshCountingStore()
    run_to_the_end(consumer, store, registry, max_records=2,
                   visibility=VisibilityPolicy(min_interval_s=0.0))
    assert store.refreshes == [{f"doc-{i}" for i in range(5)}]


def test_refreshes_are_spaced_and_none_means_never(registry: CollectorRegistry) -> None:
    clock = [100.0]
    policy = VisibilityPolicy(min_interval_s=0.2, clock=lambda: clock[0])
    assert policy.due(1, 200)
    policy.refreshed()
    assert not policy.due(1, 200)          # within 0.2 s of the last one
    clock[0] += 0.2
    assert policy.due(1, 200)
    assert not policy.due(200, 200)        # a full batch: a backlog, the index refreshes
    assert not policy.due(0, 200)          # nothing written
    assert not VisibilityPolicy(min_interval_s=None).due(1, 200)
    consumer = FakeConsumer([record(P0, 0, "refund")], assigned={P0})
    store = RefreshCountingStore()
    run_to_the_end(consumer, store, registry, max_records=2,
                   visibility=VisibilityPolicy(min_interval_s=None))
    assert store.refreshes == []


@pytest.mark.parametrize("error", [StoreError("refresh timed out"),
                                   StoreAccessError("403: no 'maintenance' privilege")])
def test_a_failed_refresh_loses_nothing(registry: CollectorRegistry, error: StoreError) -> None:
    consumer = FakeConsumer([record(P0, 0, "refund"), record(P0, 1, "terms")], assigned={P0})
    store = RefreshCountingStore(fail_with=error)
    policy = VisibilityPolicy(min_interval_s=0.0)
    run_to_the_end(consumer, store, registry, max_records=5, visibility=policy)
    assert {s.document_id for s in store.iter_states()} == {"refund", "terms"}
    assert store.refreshes, "the worker never tried to refresh"
    if isinstance(error, StoreAccessError):
        assert policy.min_interval_s is None  # no right to refresh: not tried again
    else:
        assert registry.get_sample_value(
            "policy_indexer_transient_errors_total", {"operation": "refresh"}) == 1.0
