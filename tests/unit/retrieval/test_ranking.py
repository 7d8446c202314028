"""Fusion and provenance: ranks combine as RRF says; a clause is the heading's numbering."""

from __future__ import annotations

import pytest
from support.chunks import make_chunk

from retrieval.fusion import reciprocal_rank_fusion
from retrieval.provenance import clause_of, link_of


def test_rrf_rewards_agreement_and_a_small_constant_rewards_a_first_place() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["b", "a", "d"]], k=10))
    assert fused["a"] == fused["b"] == pytest.approx(1 / 11 + 1 / 12)
    assert fused["a"] > fused["c"] > 0
    legs = [["x", "y"], ["z", "a", "b", "c", "d", "y"]]
    assert reciprocal_rank_fusion(legs, k=1)[0][0] == "x"  # a first place wins
    assert reciprocal_rank_fusion(legs, k=60)[0][0] == "y"  # two middling places win
    with pytest.raises(ValueError, match="k="):
        reciprocal_rank_fusion([["a"]], k=-1)


@pytest.mark.parametrize(
    ("heading", "clause"),
    [("4.2 Refunds", "4.2"), ("4.2. Refunds", "4.2"), ("B. Exceptions", "B."),
     ("IV. Termination", "IV."), ("Section 7: Fees", "7"), ("A rider may ask", "slug"),
     ("Refund window", "slug"), ("I agree", "slug")],
)
def test_the_clause_is_the_headings_own_numbering_else_the_slug(heading: str, clause: str) -> None:
    chunk = make_chunk("terms", 1, "slug", heading_path=["Terms", heading])
    assert clause_of(chunk) == clause


def test_the_link_is_the_source_path_and_the_section_anchor() -> None:
    chunk = make_chunk("terms", 1, "fees", metadata={"source_path": "legal/terms.md"})
    assert link_of(chunk) == "legal/terms.md#fees"
    assert link_of(make_chunk("terms", 1, "fees")) == "terms#fees"
