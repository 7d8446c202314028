"""The question is encoded while the keyword leg runs, and a repeated question is not encoded.

Both are latency (the goal: p95 < 150 ms embedded, encoding included); neither
may change an answer.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, date, datetime

import numpy as np
import pytest
from support.chunks import make_chunk

from embeddings.encoder import TextKind, Vectors
from embeddings.query_cache import QueryVectors
from retrieval.models import SearchRequest
from retrieval.service import SearchService
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex
from store.model import DocumentState
from store.search import SearchHit
from store.search_index import SearchFilters

DAY = date(2027, 4, 1)
T0 = datetime(2027, 1, 1, tzinfo=UTC)
DEADLINE_S = 10.0


class CountingEncoder:
    """Every text on the first axis; counts the texts it encodes and names the thread."""

    model_id = "counting@2"
    dim = 2

    def __init__(self) -> None:
        self.encoded: list[str] = []
        self.threads: set[str] = set()
        self.started = threading.Event()

    def encode(self, texts: Sequence[str], *, kind: TextKind = "passage") -> Vectors:
        self.started.set()
        self.threads.add(threading.current_thread().name)
        self.encoded += texts
        return np.asarray([[1.0, 0.0]] * len(texts), dtype=np.float32)


def library(index: InMemorySearchIndex | None = None) -> InMemorySearchIndex:
    index = index or InMemorySearchIndex(InMemoryStore())
    chunks = [make_chunk("refunds", 1, s, text=f"refund {s} rule", metadata={"language": "en"})
              for s in ("window", "damage")]
    index.store.write_chunks(chunks)
    index.store.put_state(
        DocumentState("refunds", 1, T0, T0, tuple(c.chunk_id for c in chunks)))
    index.put_vectors("counting@2", {c.chunk_id: [1.0, 0.0] for c in chunks})
    return index


def ask(question: str) -> SearchRequest:
    return SearchRequest(question=question, as_of=DAY)


def test_a_repeated_question_is_encoded_once_and_answered_the_same() -> None:
    encoder = CountingEncoder()
    service = SearchService(library(), encoder, clock=lambda: DAY)
    first = service.search(ask("refund window"), frozenset())
    again = service.search(ask("refund window"), frozenset())
    other = service.search(ask("refund damage"), frozenset())
    assert encoder.encoded == ["refund window", "refund damage"]
    assert first.status == again.status == other.status == "ok"
    assert [p.chunk_id for p in again.passages] == [p.chunk_id for p in first.passages]
    assert service.query_vectors[encoder.model_id].hits == 1
    service.close()


def test_the_query_cache_is_bounded_and_its_vectors_cannot_be_changed() -> None:
    encoder = CountingEncoder()
    vectors = QueryVectors(encoder, size=2)
    first = vectors.vector("a")
    with pytest.raises(ValueError, match="read-only"):
        first[0] = 5.0
    vectors.vector("b")
    vectors.vector("c")  # "a" is the least recently used: evicted
    vectors.vector("a")
    assert encoder.encoded == ["a", "b", "c", "a"]
    with pytest.raises(ValueError, match="size=-1"):
        QueryVectors(encoder, size=-1)


class WaitingIndex(InMemorySearchIndex):
    """A keyword leg that returns only once the encoder has started: it would wait
    forever (here: fail at the deadline) if the question were encoded after it."""

    def __init__(self, encoder: CountingEncoder) -> None:
        super().__init__(InMemoryStore())
        self.encoder = encoder

    def keyword_search(
        self, terms: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[SearchHit]:
        if not self.encoder.started.wait(DEADLINE_S):
            raise AssertionError(f"the question was not being encoded within {DEADLINE_S} s")
        return super().keyword_search(terms, filters, limit)


def test_the_question_is_encoded_while_the_keyword_leg_runs() -> None:
    encoder = CountingEncoder()
    service = SearchService(library(WaitingIndex(encoder)), encoder, clock=lambda: DAY)
    response = service.search(ask("refund window"), frozenset())
    assert response.status == "ok" and response.passages
    assert encoder.threads and all(t.startswith("query-encoder") for t in encoder.threads)
    service.close()
