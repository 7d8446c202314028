"""One polled batch: records parsed, applied through the indexer, poison dead-lettered, counted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry
from support.chunks import fake_chunker

from consumers.dead_letter import DeadLetter
from consumers.handling import OutcomeCounter, attempt, parse_event
from events.model import Action, ChangeEvent
from indexing.core import Indexer
from indexing.errors import PoisonEvent
from indexing.model import Outcome
from metrics.definitions import WorkerMetrics
from store.memory import InMemoryStore


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"not json {", "not_json"),
        (None, "not_json"),
        (b'{"event_id": "x"}', "schema"),
        (b'{"event_id":"x","document_id":"a#b","action":"delete","version":1,'
         b'"changed_at":"2024-01-01T00:00:00Z"}', "schema"),
        (b'{"event_id":"x","document_id":"a","action":"upsert","version":1,'
         b'"changed_at":"2024-01-01T00:00:00Z"}', "schema"),
    ],
)
def test_bad_bytes_are_poison_with_a_reason(raw: bytes | None, reason: str) -> None:
    with pytest.raises(PoisonEvent) as caught:
        parse_event(raw)
    assert caught.value.reason == reason


@dataclass(frozen=True)
class Record:
    value: bytes | None
    offset: int
    key: bytes | None = b"k"
    topic: str = "changes"
    partition: int = 0


class Letters:
    def __init__(self) -> None:
        self.sent: list[DeadLetter] = []

    def send(self, letter: DeadLetter) -> None:
        self.sent.append(letter)


def upsert(doc: str, version: int, content: str) -> bytes:
    return ChangeEvent(
        event_id=f"{doc}-{version}", document_id=doc, action=Action.UPSERT, version=version,
        changed_at=datetime(2024, 1, version, tzinfo=UTC), content_type="text/markdown",
        content=content,
    ).to_json_bytes()


def test_a_batch_is_applied_dead_lettered_and_counted_from_the_apply() -> None:
    store = InMemoryStore()
    indexer = Indexer(store, chunk=fake_chunker)
    indexer.apply_one(ChangeEvent.from_json_bytes(upsert("d", 1, "alpha\n\nbeta")))
    records = [Record(upsert("d", 2, "alpha again"), 0), Record(b"{oops", 1),
               Record(upsert("e", 1, "BOOM"), 2)]
    letters = Letters()
    registry = CollectorRegistry()
    counter = OutcomeCounter(WorkerMetrics.create(registry))

    handled = attempt(records, indexer, letters)
    counter.count(handled)

    results = [r for _, r, _ in handled.records]
    assert results[0] is Outcome.INDEXED
    assert [r.reason for r in results[1:] if isinstance(r, PoisonEvent)] == ["not_json", "chunker"]
    assert [(d.reason, d.offset) for d in letters.sent] == [("not_json", 1), ("chunker", 2)]
    assert sorted(store.chunks) == ["d@v2#alpha"]
    # The counts come from this apply only, not from anything the indexer did before.
    assert registry.get_sample_value("policy_indexer_chunks_written_total") == 1
    assert registry.get_sample_value("policy_indexer_chunks_deleted_total") == 2
    assert registry.get_sample_value(
        "policy_indexer_events_total", {"outcome": "dead_lettered"}) == 2
