"""A document's lead-in preamble does not outrank the rule that answers.

The text before a document's first heading names the topic of every rule below
it (a refund policy's introduction mentions refunds, scooters and the cities),
so both legs rank it near any question on the topic, above the rule a reader
needs. Its fused score is halved (``PREAMBLE_WEIGHT``, chosen on every public
question set: ``docs/search.md``, "How a ranking change is chosen") when the
document has sections after it; a document that is one preamble is left alone.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from support.chunks import make_chunk
from support.stores import add_current

from chunker import chunk_document
from chunker.model import Neighbours
from embeddings.minilm import MiniLMEncoder
from retrieval.models import SearchRequest
from retrieval.service import PREAMBLE_WEIGHT, SearchService
from sources.folder import content_type_for, document_id_for
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex
from store.search_terms import text_to_embed

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "library"
DAY = date(2026, 6, 1)
EN = {"language": "en"}


def ranked(service: SearchService, question: str, scope: tuple[str, ...] = (),
           k: int = 5) -> dict[str, float]:
    """chunk id -> score, best first."""
    response = service.search(SearchRequest(question=question, neighbours=False,
                                            scope=list(scope), k=k), frozenset({"public"}))
    assert response.status == "ok", response
    return {p.chunk_id: p.score for p in response.passages}


def test_a_lead_in_preamble_goes_below_the_rule_a_one_chunk_document_does_not() -> None:
    store = InMemoryStore()
    lead_in = make_chunk("refunds", 1, "_preamble", heading_path=["Refunds"],
                         text="Refunds for scooter rides", metadata=EN, neighbours=Neighbours(
                             next="refunds@v1#window"))
    rule = make_chunk("refunds", 1, "window", ordinal=1, heading_path=["Refunds", "Window"],
                      metadata=EN,
                      text="A scooter with a flat tyre is refunded in full when it is "
                      "reported in the app within five minutes of the start, whatever the "
                      "city or the pass",
                      neighbours=Neighbours(
                          previous="refunds@v1#_preamble"))
    alone = make_chunk("notice", 1, "_preamble", heading_path=["Notice"], metadata=EN,
                       text="Scooter rides refunds notice")
    add_current(store, [lead_in, rule, alone])
    question = "refunds for scooter rides"
    undamped = ranked(SearchService(InMemorySearchIndex(store), None, clock=lambda: DAY,
                                    preamble_weight=1.0), question)
    damped = ranked(SearchService(InMemorySearchIndex(store), None, clock=lambda: DAY), question)
    # The keyword leg alone ranks the lead-in (short, every term) above the rule ...
    assert undamped["refunds@v1#_preamble"] > undamped["refunds@v1#window"], undamped
    # ... and damped, the rule goes above it; a document that is one preamble keeps its score.
    assert damped["refunds@v1#window"] > damped["refunds@v1#_preamble"], damped
    assert damped["refunds@v1#_preamble"] == pytest.approx(
        undamped["refunds@v1#_preamble"] * PREAMBLE_WEIGHT, abs=1e-5)  # scores: 6 places
    assert damped["notice@v1#_preamble"] == pytest.approx(undamped["notice@v1#_preamble"])


def test_the_readme_example_returns_the_flat_tyre_rule_in_the_top_three() -> None:
    """README.md's "Ask it" question on the sample library, with the shipped encoder:
    an agent that asks for 3 passages sees the rule that names the flat tyre."""
    store = InMemoryStore()
    chunks = []
    for path in sorted(EXAMPLES.rglob("*")):
        if path.suffix in {".md", ".html"}:
            relative = path.relative_to(EXAMPLES).as_posix()
            chunks += chunk_document(document_id_for(relative), 1, path.read_text(),
                                     content_type=content_type_for(relative),
                                     metadata={"source_path": relative},
                                     changed_at=datetime(2026, 1, 1, tzinfo=UTC))
    add_current(store, chunks)
    index = InMemorySearchIndex(store)
    encoder = MiniLMEncoder()
    index.put_vectors(encoder.model_id, dict(zip(
        [c.chunk_id for c in chunks], encoder.encode([text_to_embed(c) for c in chunks]).tolist(),
        strict=True)))
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    question = re.search(r'policy-indexer search "([^"]+)" --scope lisbon', readme)
    assert question is not None, "README.md's example search is gone"
    top = ranked(SearchService(index, encoder, clock=lambda: DAY), question.group(1),
                 scope=("lisbon",), k=3)
    assert "refunds@v1#refund-window" in top, top
    # Without the damping the two preambles take places 1 and 2 and the rule is 5th.
    undamped = ranked(SearchService(index, encoder, clock=lambda: DAY, preamble_weight=1.0),
                      question.group(1), scope=("lisbon",), k=3)
    assert "refunds@v1#refund-window" not in undamped, undamped
