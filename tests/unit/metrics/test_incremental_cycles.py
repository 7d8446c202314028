"""Incremental cycles give exactly what full cycles give: two monitors side by side.

One monitor reads only what changed (``full_every=None``: no full cycle after the
first), the other reads everything every cycle; both watch the same source and
store through random rounds of changes (new versions, tombstones at the source,
documents that leave the listing, unreadable entries, refusals, another owner,
states and tombstones in the index, chunks written and deleted, leftovers, a chunk
of an unknown document, a future-dated change) and must give equal snapshots and
equal lag memory after every round, on every store: the memory store and
Elasticsearch read what changed (``store.base.ChangeReads``), SQLite is read whole
and judged incrementally.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from support.chunks import make_chunk
from support.source_fakes import ListSource
from support.stores import STORE_FACTORIES, StoreFactory

from metrics.monitor import FreshnessMonitor
from sources.base import SourceEntry, Unreadable, UnreadableKind
from store.base import ChangeReads, Store
from store.memory import InMemoryStore
from store.model import ChunkRef, DocumentState

START = datetime.now(UTC).replace(microsecond=0)
MIN = timedelta(minutes=1)
DOCS = [f"doc-{i:02d}" for i in range(24)]


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The monitor's clock, and the one every store stamps its chunks with (a writer
    whose clock runs behind the monitor's by more than the margin is what the
    periodic full cycle is for, not what this test is about)."""
    made = Clock()

    class Stamped(datetime):
        @classmethod
        def now(cls, tz: object = None) -> datetime:  # type: ignore[override]
            return made.now

    for module in ("store.memory", "store.sqlite", "store.elasticsearch"):
        monkeypatch.setattr(f"{module}.datetime", Stamped)
    return made


@pytest.fixture(params=STORE_FACTORIES)
def store(request: pytest.FixtureRequest, clock: Clock) -> Iterator[Store]:
    factory: StoreFactory = request.param
    with factory(request) as made:
        yield made


class World:
    """The source, the index and the refusals, changed at random by ``round``."""

    def __init__(self, store: Store, clock: Clock, rng: random.Random) -> None:
        self.store, self.clock, self.rng = store, clock, rng
        self.source = ListSource()
        self.refused: set[tuple[str, int]] = set()
        self.versions = dict.fromkeys(DOCS, 0)  # the last version the source made

    def source_change(self, doc: str) -> None:
        now, rng = self.clock.now, self.rng
        kind = rng.choice(["live", "live", "live", "tombstone", "unlist", "unreadable",
                           "future"])
        if kind == "unlist":
            self.source.entries.pop(doc, None)
            return
        if kind == "unreadable":
            self.source.put(SourceEntry(doc, 0, now, unreadable=Unreadable(
                UnreadableKind.PERMISSION, f"{doc}: permission denied")))
            return
        self.versions[doc] += 1
        changed = now + 5 * MIN if kind == "future" else now - rng.randint(0, 30) * MIN
        self.source.put(SourceEntry(doc, self.versions[doc], changed,
                                    deleted=kind == "tombstone"))

    def index_change(self, doc: str) -> None:
        now, rng, store = self.clock.now, self.rng, self.store
        kind = rng.choice(["index", "index", "tombstone", "leftover", "delete_chunks",
                           "other_owner"])
        state = store.get_state(doc)
        version = max(self.versions[doc], state.version if state else 0, 1)
        if kind == "delete_chunks":
            store.delete_chunks([ref.chunk_id for ref in store.find_chunks(doc)
                                 if rng.random() < 0.5])
            return
        if kind == "leftover":  # an older version's chunk written late (a crashed delete)
            store.write_chunks([make_chunk(doc, max(1, version - 1), "late")])
            return
        deleted = kind == "tombstone"
        chunks = [] if deleted else [make_chunk(doc, version, f"s{i}") for i in range(2)]
        store.write_chunks(chunks)
        store.put_state(DocumentState(
            doc, version, now - 30 * MIN, now, chunk_ids=tuple(c.chunk_id for c in chunks),
            deleted=deleted, owner="elsewhere" if kind == "other_owner" else None))
        if not deleted and rng.random() < 0.7:  # the delete step, most of the time
            store.delete_chunks([ref.chunk_id for ref in store.find_chunks(doc)
                                 if ref.version < version])

    def round(self) -> None:
        rng = self.rng
        for doc in rng.sample(DOCS, 4):
            self.source_change(doc)
        for doc in rng.sample(DOCS, 3):
            self.index_change(doc)
        if rng.random() < 0.3:  # a chunk of a document without a state
            self.store.write_chunks([make_chunk(f"stray-{rng.randint(0, 3)}", 1)])
        if rng.random() < 0.3:  # the worker refuses a source version for its content
            doc = rng.choice(DOCS)
            self.refused.add((doc, self.versions[doc]))
        if self.refused and rng.random() < 0.2:  # a refusal cleared
            self.refused.discard(rng.choice(sorted(self.refused)))
        self.store.refresh()


def monitors(world: World, clock: Clock) -> tuple[FreshnessMonitor, FreshnessMonitor]:
    def refused() -> set[tuple[str, int]]:
        return set(world.refused)

    made = [FreshnessMonitor(world.source, world.store, max_series=5, clock=clock,
                             grace=timedelta(minutes=10), refused=refused,
                             full_every=every, watermark_margin=MIN)
            for every in (None, timedelta(0))]
    return made[0], made[1]


@pytest.mark.parametrize("seed", [1, 2])
def test_incremental_cycles_equal_full_cycles(store: Store, clock: Clock, seed: int) -> None:
    rng = random.Random(seed)
    world = World(store, clock, rng)
    for _ in range(3):
        world.round()
    incremental, full = monitors(world, clock)
    kinds = []
    for number in range(25):
        a, b = incremental.run_cycle(), full.run_cycle()
        assert a is not None and b is not None
        assert a == b, f"round {number}"
        assert incremental.memory == full.memory, f"round {number}"
        kinds.append(incremental.status.last_cycle_kind)
        clock.now += rng.choice([MIN, 3 * MIN, 11 * MIN])  # past the grace period, at times
        world.round()
    assert kinds[0] == "full"
    assert set(kinds[1:]) == {"incremental"}


class CountingStore(InMemoryStore):
    """Counts the states and chunks its change reads return."""

    def __init__(self) -> None:
        super().__init__()
        self.read = {"states": 0, "chunks": 0}

    def iter_states_since(self, since: datetime) -> Iterator[DocumentState]:
        states = list(super().iter_states_since(since))
        self.read["states"] += len(states)
        return iter(states)

    def iter_chunks_of(self, document_ids: Collection[str]) -> Iterator[ChunkRef]:
        refs = list(super().iter_chunks_of(document_ids))
        self.read["chunks"] += len(refs)
        return iter(refs)


def test_a_quiet_cycle_reads_only_what_changed(clock: Clock) -> None:
    store, source = CountingStore(), ListSource()
    assert isinstance(store, ChangeReads)
    for doc in DOCS:
        source.put(SourceEntry(doc, 1, START - 90 * MIN))
        store.write_chunks([make_chunk(doc, 1)])
        store.put_state(DocumentState(doc, 1, START - 90 * MIN, START))
    monitor = FreshnessMonitor(source, store, max_series=5, clock=clock, full_every=None,
                               watermark_margin=MIN)
    clock.now += 10 * MIN  # the library written well before the first cycle
    monitor.run_cycle()
    clock.now += 10 * MIN
    store.write_chunks([make_chunk("doc-03", 2)])
    store.put_state(DocumentState("doc-03", 2, clock.now - MIN, clock.now))
    source.put(SourceEntry("doc-03", 2, clock.now - MIN))
    snapshot = monitor.run_cycle()
    assert snapshot is not None and monitor.status.last_cycle_kind == "incremental"
    # the one state written since the watermark; the chunks of that one document
    assert store.read == {"states": 1, "chunks": 2}
    assert (snapshot.leftover_versions, snapshot.chunks_examined) == (1, len(DOCS) + 1)
    clock.now += 10 * MIN
    store.delete_chunks(["doc-03@v1#intro"])  # the delete step, late
    snapshot = monitor.run_cycle()
    assert snapshot is not None
    # nothing written since (doc-03's state is read again: within the margin of the
    # last cycle's start); the document that held a leftover is read again
    assert store.read == {"states": 2, "chunks": 3}
    assert (snapshot.leftover_versions, snapshot.chunks_examined) == (0, len(DOCS))


def test_a_state_gone_from_the_index_is_caught_by_the_next_full_cycle() -> None:
    store, clock, source = InMemoryStore(), Clock(), ListSource()
    for doc in ("a", "b"):
        source.put(SourceEntry(doc, 1, START - 90 * MIN))
        store.put_state(DocumentState(doc, 1, START - 90 * MIN, START - 80 * MIN))
    monitor = FreshnessMonitor(source, store, max_series=5, clock=clock,
                               full_every=timedelta(hours=1), watermark_margin=MIN)
    monitor.run_cycle()
    del store.states["b"]  # no watermark shows a removal
    clock.now += 10 * MIN
    snapshot = monitor.run_cycle()
    assert snapshot is not None and monitor.status.last_cycle_kind == "incremental"
    assert snapshot.indexed_documents == 2  # the removal is not seen by a watermark
    assert monitor.status.last_cycle_kind == "incremental"
    clock.now += 60 * MIN
    snapshot = monitor.run_cycle()
    assert snapshot is not None and monitor.status.last_cycle_kind == "full"
    assert snapshot.indexed_documents == 1
    assert snapshot.behind_by_status["missing_from_index"] == 1
