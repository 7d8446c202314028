"""A small ``Searcher`` (our own interface) for the HTTP, MCP and eval tests.

It ranks a fixed list of passages by shared words with the question and keeps
the permission rule the real service keeps inside its query: a passage is
visible when every label it carries is among the caller's. It answers
``no_access`` when matching passages exist but none is visible, and
``no_document`` when nothing matches, so the interfaces' handling of each
status can be checked without a store.
"""

from __future__ import annotations

import re
import threading
from datetime import UTC, date, datetime

from retrieval.models import Passage, SearchRequest, SearchResponse

_WORD = re.compile(r"\w{3,}")
AS_OF = date(2026, 12, 1)
PUBLIC_MARKER = "refund the delivery fee within 14 days"
FINANCE_MARKER = "chargeback reserve of 5 percent"


def passage(
    document_id: str, text: str, labels: list[str] | None = None, clause: str = "1"
) -> Passage:
    return Passage(
        document_id=document_id,
        title=document_id.replace("-", " ").title(),
        version=3,
        clause=clause,
        chunk_id=f"{document_id}@v3#{clause}",
        heading_path=[document_id, clause],
        scope=[],
        access_labels=list(labels or []),
        valid_from=date(2026, 1, 1),
        valid_to=None,
        effective_date=date(2026, 1, 1),
        changed_at=datetime(2026, 11, 29, 18, 4, 5, tzinfo=UTC),
        link=f"policies/{document_id}.md#{clause}",
        score=0.0,
        text=text,
        via="ranked",
    )


def sample_passages() -> list[Passage]:
    return [
        passage("refunds", f"Late delivery: {PUBLIC_MARKER}.", clause="4.2"),
        passage("finance-chargebacks", f"Chargebacks hold a {FINANCE_MARKER}.",
                labels=["finance"], clause="2.1"),
    ]


class LabelFilteringSearcher:
    """Ranks by shared words; filters by labels before ranking; remembers the labels seen."""

    def __init__(self, passages: list[Passage]) -> None:
        self._passages = passages
        self._lock = threading.Lock()
        self.calls: list[tuple[SearchRequest, frozenset[str]]] = []
        self.fail_with: Exception | None = None

    def search(self, request: SearchRequest, caller_labels: frozenset[str]) -> SearchResponse:
        with self._lock:
            self.calls.append((request, caller_labels))
        if self.fail_with is not None:
            raise self.fail_with
        words = {w.lower() for w in _WORD.findall(request.question)}
        matching = [(len(words & {w.lower() for w in _WORD.findall(p.text)}), p)
                    for p in self._passages]
        matching = [(score, p) for score, p in matching if score > 0]
        visible = [(s, p) for s, p in matching if set(p.access_labels) <= caller_labels]
        as_of = request.as_of or AS_OF
        if not matching:
            return SearchResponse(status="no_document", message="I have no document on this.",
                                  as_of=as_of, threshold=1.0)
        if not visible:
            return SearchResponse(status="no_access",
                                  message="There is no document on this that you can see.",
                                  as_of=as_of, threshold=1.0)
        visible.sort(key=lambda sp: -sp[0])
        ranked = [p.model_copy(update={"score": float(s)}) for s, p in visible[: request.k]]
        return SearchResponse(status="ok", message=f"{len(ranked)} passage(s).",
                              passages=ranked, as_of=as_of, threshold=1.0,
                              best_score=ranked[0].score)
