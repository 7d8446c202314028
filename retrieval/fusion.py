"""Reciprocal rank fusion: one ranking from several, by rank alone.

``score(chunk) = sum over legs of 1 / (k + rank)``, rank 1-based. Ranks and not
scores, because BM25 and cosine are on unrelated scales. ``k`` damps the top:
the customary 60 (Cormack et al., 2009) was tuned for long TREC rankings; with
few, precise passages a smaller constant lets a chunk that one leg ranks first
win. k=5 is the constant with the best mean recall@5 over every public
question set (``bench/bench_retrieval.py``; docs/search.md, "Kept changes"):
0.798, against 0.775 for k=10 and 0.742 for k=20.
"""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_RRF_K = 5


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], *, k: int = DEFAULT_RRF_K, weights: Sequence[float] = ()
) -> list[tuple[str, float]]:
    """(id, fused score) best first; ties by the id so the order is deterministic."""
    if k < 0:
        raise ValueError(f"k={k!r}: the fusion constant must be >= 0")
    scores: dict[str, float] = {}
    for leg, ranking in enumerate(rankings):
        weight = weights[leg] if leg < len(weights) else 1.0
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
