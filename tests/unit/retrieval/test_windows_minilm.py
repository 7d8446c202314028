"""The dense leg sees the whole chunk: evidence after the first 256 tokens of a long
section is found through its windows, with the real packaged MiniLM (no fake)."""

from __future__ import annotations

import functools
from datetime import UTC, date, datetime

import pytest
from support.chunks import make_chunk

from embeddings.backfill import reembed
from embeddings.cache import CachedEncoder, InMemoryEmbeddingCache
from embeddings.views import DenseView, WindowShape
from retrieval.models import SearchRequest
from retrieval.service import SearchService
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex
from store.model import DocumentState
from store.search_index import SearchFilters
from store.search_terms import embed_windows

minilm = pytest.importorskip("embeddings.minilm")

FILLER = (
    "Our offices open at nine in the morning and close at six in the evening on weekdays. "
    "Visitors sign in at the front desk and wear a badge while in the building. "
    "Meeting rooms are booked through the internal calendar at least one day ahead. "
)
EVIDENCE = "A scooter returned with a flat tyre is refunded in full within fourteen days."
QUESTION = "will I get my money back if the scooter had a flat tire"
DAY = date(2027, 1, 1)
AT = datetime(2027, 1, 1, tzinfo=UTC)


def test_evidence_after_the_first_256_tokens_is_found_by_the_windows_only() -> None:
    long_text = FILLER * 12 + EVIDENCE  # ~460 words before the rule
    assert len(long_text.split()) > 300
    target = make_chunk("handbook", 1, "general", text=long_text,
                        heading_path=["Staff handbook", "General"], metadata={"title": "x"})
    others = [make_chunk("handbook", 1, f"s{i}", text=text,
                         heading_path=["Staff handbook", f"Section {i}"], ordinal=i + 1)
              for i, text in enumerate([
                  "Parking spaces are assigned by seniority and renewed every January.",
                  "Lost badges are replaced by security for a fee of ten euros.",
                  "Printers on the second floor need a staff card to release a job.",
              ])]
    store = InMemoryStore()
    store.write_chunks([target, *others])
    store.put_state(DocumentState("handbook", 1, AT, AT,
                                  tuple(c.chunk_id for c in [target, *others])))
    index = InMemorySearchIndex(store)
    encoder = CachedEncoder(minilm.MiniLMEncoder(), InMemoryEmbeddingCache())
    windows = DenseView(encoder, WindowShape(150, 75),
                        functools.partial(embed_windows, words=150, stride=75))
    reembed(index, encoder, progress=False)  # the whole-chunk view
    reembed(index, encoder, progress=False, view_id=windows.view_id, windows=windows.windows)

    def dense_rank(view: DenseView) -> tuple[list[str], float]:
        service = SearchService(index, None, views=[view], threshold=-1.0, clock=lambda: DAY)
        try:
            hits = service.index.vector_search(
                view.view_id, service.query_vectors[encoder.model_id].vector(QUESTION),
                SearchFilters(DAY), 10)
        finally:
            service.close()
        return [h.chunk_id for h in hits], next(h.score for h in hits
                                                 if h.chunk_id == target.chunk_id)

    whole_order, whole_score = dense_rank(DenseView(encoder))
    window_order, window_score = dense_rank(windows)
    assert window_order[0] == target.chunk_id, window_order
    assert whole_order[0] != target.chunk_id, whole_order  # the rule was cut off at 256
    assert window_score > whole_score + 0.1
    # and first through the service (both legs fused; the threshold is another matter)
    service = SearchService(index, None, views=[windows], threshold=-1.0, clock=lambda: DAY)
    answer = service.search(SearchRequest(question=QUESTION, neighbours=False, k=1), frozenset())
    service.close()
    assert [p.chunk_id for p in answer.passages] == [target.chunk_id], answer

