"""search_policy: a keyword leg and dense legs, fused, thresholded, with neighbours and provenance.

::

    question ──analyse (its language, and English when unsure)──▶ keyword leg (BM25)  ─┐
             ──each view's encoder (query)─────────────────────▶ a dense leg per view ─┼▶ RRF
    every filter (current version, scope, date, permission) is inside every leg      ─┘
        ▶ threshold on a confidence ▶ top k ranked ▶ neighbours appended (same filters)

- Dense legs: one per view (``embeddings.views``: an encoder, whole chunks or windows
  scored by the best window, the languages it is asked in); none without an encoder. A
  chunk whose vector has not arrived yet is still found by the keyword leg (vectors
  follow writes, so freshness never waits for the encoder).
- Confidence: with an encoder, the best cosine of the primary (first) view's leg (a calibrated
  similarity, unlike a fused rank score); without one, the share of the
  question's terms that the best ranked passages contain. Below the threshold
  the answer is ``no_document``. A top passage that has no vector yet is judged
  by the keyword confidence (the dense leg cannot see it), so answers never
  wait for the encoder; the response names the legs that returned candidates.
- ``no_access`` is off unless the interface passes ``may_tell`` (the API key's
  flag and rate limit, ``retrieval.no_access``) to ``search_telling_no_access``.
  Then, only when the caller's own search found nothing, the answer is
  ``no_access`` if one chunk the caller may not see (but which the scope, date
  and current-version filters admit) has at least ``MIN_HEADING_TERMS`` of the
  question's terms in its **title and heading path** (all of them if it has
  fewer). Its text is never read for the decision and no cosine is computed,
  so two questions that differ only in words outside every title and heading
  (a code in a staff passage's body) get the same answer.
- The question is encoded on a worker thread while the keyword leg runs on the
  caller's (onnxruntime and sqlite3 both release the GIL, so on two cores the
  legs overlap), and the vectors of the last ``query_cache_size`` questions
  are kept (``embeddings.query_cache``): a repeated question is not encoded.
- A document's lead-in preamble (text before its first heading, with sections
  after it) has its fused score halved: it names the topic of every rule below
  it and would otherwise outrank the rule that answers.
- When the filters leave no more than k chunks, all of them come back, ranked
  (those neither leg found last, with score 0).
- A cross-encoder (``reranker``, ``retrieval.rerank``), where the deployment has
  one, rescores the fused top ``reranker_candidates`` (chunks the filters
  admitted, nothing else) on their embed text and reorders them; its best score
  is then the confidence, against its own threshold. It is not a leg: ``legs``
  still names the legs that found the candidates. Without one, nothing changes.
- Neighbours: the ``related`` links of each ranked passage (an exception and
  its rule), then its previous/next chunk, at most ``k`` in all, never counted
  in k and never one that is already ranked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING

from analysis.languages import detect, normalise
from analysis.terms import analyse, query_terms
from chunker.model import Chunk
from chunker.sections import PREAMBLE_SLUG
from embeddings.encoder import Encoder
from embeddings.query_cache import DEFAULT_SIZE as QUERY_CACHE_SIZE
from embeddings.query_cache import QueryVectors
from embeddings.views import DenseView, check_distinct, distinct_encoders
from retrieval.fusion import DEFAULT_RRF_K, reciprocal_rank_fusion
from retrieval.models import Freshness, Leg, Passage, SearchRequest, SearchResponse, Status
from retrieval.provenance import passage
from store.search import SearchHit
from store.search_index import (
    MAX_SEARCH_LIMIT,
    BothLegs,
    SearchFilters,
    SearchIndex,
    Vector,
    check_labels,
)
from store.search_terms import chunk_terms, text_to_embed

if TYPE_CHECKING:  # onnxruntime loads only where a reranker is configured
    from retrieval.rerank import Reranker

# Thresholds measured on the basecamp QA set; weights chosen on every public set
# (bench/bench_retrieval.py, docs/search.md "How a ranking change is chosen").
DEFAULT_THRESHOLD = 0.30  # best dense cosine (MiniLM): refuses the off-topic, see docs/search.md
DEFAULT_KEYWORD_THRESHOLD = 0.5  # share of the question's terms in the best passages
# Below this detector probability the question is also analysed in English.
SURE_LANGUAGE = 0.95
CANDIDATES = 50  # hits asked of each leg before fusion
LEG_WEIGHTS = (1.0, 1.0)  # keyword, dense: each leg's share in the fusion
PREAMBLE_WEIGHT = 0.5  # a lead-in preamble's fused score is multiplied by this (_is_lead_in)
RERANKER_CANDIDATES = 30  # of the fused top, rescored by the reranker
# no_access: question terms a hidden chunk's title and heading path must hold (or all of
# its own, when it has fewer), and how many hidden chunks are looked at.
MIN_HEADING_TERMS = 2
NO_ACCESS_CANDIDATES = MAX_SEARCH_LIMIT
# Threads that encode questions while the keyword leg runs: two cores, and onnxruntime's
# own threads do the arithmetic.
ENCODER_THREADS = 2

# The question's vector per model id, being encoded meanwhile: call it to wait for them.
VectorSource = Callable[[], dict[str, Vector]]


def _today() -> date:
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class _Ranked:
    chunks: list[Chunk]
    scores: dict[str, float]
    confidence: float | None
    threshold: float  # the one the confidence is measured against
    legs: tuple[Leg, ...]  # the legs that returned a candidate


class SearchService:
    """Implements ``retrieval.searcher.Searcher`` over any ``store.search_index.SearchIndex``."""

    def __init__(
        self,
        index: SearchIndex,
        encoder: Encoder | None,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        keyword_threshold: float = DEFAULT_KEYWORD_THRESHOLD,
        freshness: Callable[[str], Freshness | None] | None = None,
        clock: Callable[[], date] = _today,
        rrf_k: int = DEFAULT_RRF_K,
        candidates: int = CANDIDATES,
        query_cache_size: int = QUERY_CACHE_SIZE,
        reranker: Reranker | None = None,
        reranker_candidates: int = RERANKER_CANDIDATES,
        leg_weights: tuple[float, float] = LEG_WEIGHTS,
        preamble_weight: float = PREAMBLE_WEIGHT,
        views: Sequence[DenseView] | None = None,
    ) -> None:
        # The dense legs: one per view (embeddings.views); ``encoder`` alone is one view of
        # whole chunks. The first view is the primary: its cosine is the confidence.
        if views is None:
            views = [DenseView(encoder)] if encoder is not None else []
        elif views and encoder is not None and views[0].encoder is not encoder:
            raise ValueError("encoder and views[0].encoder differ: pass one or the other")
        check_distinct(views)
        self.views = list(views)
        self.index = index
        self.encoder = self.views[0].encoder if self.views else None
        self.threshold = threshold
        self.keyword_threshold = keyword_threshold
        self.freshness = freshness
        self.clock = clock
        self.rrf_k = rrf_k
        self.candidates = candidates
        self.reranker = reranker
        self.reranker_candidates = reranker_candidates
        self.leg_weights = leg_weights
        self.preamble_weight = preamble_weight
        self.query_vectors = {
            e.model_id: QueryVectors(e, query_cache_size) for e in distinct_encoders(self.views)
        }
        # Threads start on the first search and end with close() or when the service goes.
        self._encoding = ThreadPoolExecutor(ENCODER_THREADS, thread_name_prefix="query-encoder")

    def close(self) -> None:
        """Stop the encoding threads (idle ones; a search in flight finishes first)."""
        self._encoding.shutdown(wait=True)

    @property
    def active_threshold(self) -> float:
        if self.reranker is not None:
            return self.reranker.threshold
        return self.threshold if self.encoder is not None else self.keyword_threshold

    def search(self, request: SearchRequest, caller_labels: frozenset[str]) -> SearchResponse:
        """The answer for a caller who is never told ``no_access`` (the default)."""
        return self._search(request, caller_labels, None)

    def search_telling_no_access(
        self, request: SearchRequest, caller_labels: frozenset[str],
        may_tell: Callable[[], bool],
    ) -> SearchResponse:
        """``search``, but ``no_access`` may replace ``no_document``: only if ``may_tell()``
        (called once, only when nothing visible answers: it spends the key's budget)."""
        return self._search(request, caller_labels, may_tell)

    def _search(
        self, request: SearchRequest, caller_labels: frozenset[str],
        may_tell: Callable[[], bool] | None,
    ) -> SearchResponse:
        started = time.perf_counter()
        labels = check_labels(caller_labels)
        as_of = request.as_of or self.clock()
        filters = SearchFilters(as_of, tuple(request.scope), labels)
        languages = self._languages(request)
        terms = query_terms(request.question, languages)
        views = [v for v in self.views if v.asks(languages[0])]
        vector = self._start_encoding(request.question, views)
        ranked = self._rank(request.question, terms, vector, filters, request.k, views=views)
        status: Status = "ok"
        if not self._answers(ranked):
            status = "no_document"
            if may_tell is not None and terms and may_tell() and self._hidden_heading_match(
                terms, filters
            ):
                status = "no_access"
        passages: list[Passage] = []
        if status == "ok":
            top = ranked.chunks[: request.k]
            passages = [
                passage(c, ranked.scores.get(c.chunk_id, 0.0), freshness=self.freshness)
                for c in top
            ]
            if request.neighbours:
                passages += self._neighbours(top, filters, limit=request.k)
        return SearchResponse(
            status=status,
            message=_MESSAGES[status],
            passages=passages,
            as_of=as_of,
            threshold=ranked.threshold,
            best_score=ranked.confidence,
            legs=list(ranked.legs),
            took_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    # -- ranking -----------------------------------------------------------
    def _start_encoding(self, question: str, views: Sequence[DenseView]) -> VectorSource:
        """The question's vector for each model of ``views``, being encoded meanwhile: call
        the result to wait for them."""
        wanted = {v.model_id for v in views}
        pending = {
            model_id: self._encoding.submit(vectors.vector, question)
            for model_id, vectors in self.query_vectors.items() if model_id in wanted
        }
        return lambda: {model_id: job.result() for model_id, job in pending.items()}

    def _languages(self, request: SearchRequest) -> list[str | None]:
        if request.language:
            return [normalise(request.language)]
        code, probability = detect(request.question)
        if code is None:
            return ["en"]
        return [code] if code == "en" or probability >= SURE_LANGUAGE else [code, "en"]

    def _rank(
        self, question: str, terms: list[str], vector: VectorSource, filters: SearchFilters,
        k: int, *, views: Sequence[DenseView],
    ) -> _Ranked:
        keyword, queries, denses = self._legs(terms, vector, views, filters)
        # the primary view's hits (it is never language-gated): its cosine is the confidence
        dense = denses[0] if denses and self.views and queries[0][0] is self.views[0] else []
        legs: tuple[Leg, ...] = (*(("keyword",) if keyword else ()),
                                 *(("dense",) if any(denses) else ()))
        by_id = {h.chunk_id: h.chunk for h in (*keyword, *(h for d in denses for h in d))}
        fused = reciprocal_rank_fusion(
            [[h.chunk_id for h in keyword], *([h.chunk_id for h in d] for d in denses)],
            k=self.rrf_k,
            weights=(self.leg_weights[0], *(self.leg_weights[1] * v.weight for v, _ in queries)),
        )
        if self.preamble_weight != 1.0:
            fused = sorted(
                ((cid, score * (self.preamble_weight if _is_lead_in(by_id[cid]) else 1.0))
                 for cid, score in fused),
                key=lambda pair: (-pair[1], pair[0]),
            )
        scores = dict(fused)
        chunks = [by_id[cid] for cid, _ in fused]
        if len(chunks) < k:  # do the filters leave no more than k chunks? then all of them
            pool = self.index.filtered_chunks(filters, k + 1)
            if len(pool) <= k:
                chunks += sorted(
                    (c for c in pool if c.chunk_id not in scores), key=lambda c: c.chunk_id
                )
        if not chunks:
            return _Ranked([], {}, None, self.active_threshold, legs)
        if self.reranker is not None:
            return self._rerank(self.reranker, question, chunks, scores, legs)
        if self.encoder is None:
            return _Ranked(chunks, scores, _coverage(terms, chunks[:k]), self.keyword_threshold,
                           legs)
        cosine = max((h.score for h in dense), default=None)
        if cosine is not None and cosine >= self.threshold:
            return _Ranked(chunks, scores, cosine, self.threshold, legs)
        # The dense leg is silent or unsure. A top passage it cannot see (its vector has not
        # arrived yet) is judged by the keyword leg's confidence instead: answers never wait
        # for the encoder. Asked only here, on the way to no_document.
        unseen = self._without_vectors(chunks[:k], {h.chunk_id for h in dense})
        if unseen:
            coverage = _coverage(terms, unseen)
            if cosine is None or coverage >= self.keyword_threshold:
                return _Ranked(chunks, scores, coverage, self.keyword_threshold, legs)
        return _Ranked(chunks, scores, cosine if cosine is not None else 0.0, self.threshold,
                       legs)

    def _rerank(self, reranker: Reranker, question: str, chunks: list[Chunk],
                scores: dict[str, float], legs: tuple[Leg, ...]) -> _Ranked:
        """The top candidates in the reranker's order, its scores, its best as the confidence.

        ``chunks`` are the filtered search's own: no chunk the caller may not see is here.
        """
        top = chunks[: self.reranker_candidates]
        rescored = reranker.score(question, [text_to_embed(c) for c in top])
        order = sorted(range(len(top)), key=lambda i: -rescored[i])  # stable on ties
        scores = scores | {top[i].chunk_id: rescored[i] for i in order}
        return _Ranked([top[i] for i in order] + chunks[len(top):], scores, max(rescored),
                       reranker.threshold, legs)

    def _without_vectors(self, chunks: list[Chunk], dense_ids: set[str]) -> list[Chunk]:
        """Those of ``chunks`` that have no vector of this encoder yet."""
        if self.encoder is None:
            return chunks
        maybe = [c.chunk_id for c in chunks if c.chunk_id not in dense_ids]
        missing = self.index.without_vectors(self.views[0].view_id, maybe) if maybe else set()
        return [c for c in chunks if c.chunk_id in missing]

    def _legs(
        self, terms: list[str], vector: VectorSource, views: Sequence[DenseView],
        filters: SearchFilters,
    ) -> tuple[list[SearchHit], list[tuple[DenseView, Vector]], list[list[SearchHit]]]:
        """(keyword hits, the (view, question vector) pairs asked, the hits of each), best
        first."""
        if isinstance(self.index, BothLegs):  # one round trip (Elasticsearch's _msearch)
            queries = self._dense_queries(views, vector())
            keyword, dense = self.index.both_legs(
                terms, [(v.view_id, q) for v, q in queries], filters, self.candidates)
            return keyword, queries, dense
        # the keyword leg runs while the question is being encoded
        keyword = self.index.keyword_search(terms, filters, self.candidates) if terms else []
        queries = self._dense_queries(views, vector())
        dense = [
            self.index.vector_search(view.view_id, query, filters, self.candidates)
            for view, query in queries
        ]
        return keyword, queries, dense

    @staticmethod
    def _dense_queries(views: Sequence[DenseView], vectors: dict[str, Vector]
                       ) -> list[tuple[DenseView, Vector]]:
        """(view, the question's vector of its model) for each view, in order."""
        return [(v, vectors[v.model_id]) for v in views if v.model_id in vectors]

    def _answers(self, ranked: _Ranked) -> bool:
        return (
            bool(ranked.chunks)
            and ranked.confidence is not None
            and ranked.confidence >= ranked.threshold
        )

    def _hidden_heading_match(self, terms: list[str], filters: SearchFilters) -> bool:
        """Does a chunk hidden from this caller have the question in its title and headings?

        A chunk holding a question term in its title or heading path matches the keyword
        leg (which indexes both), so it is among these candidates whatever else the
        question says, up to ``NO_ACCESS_CANDIDATES`` of them (past that, BM25 order).
        Only the candidates' titles and heading paths are compared.
        """
        wanted = set(terms)
        hidden = self.index.keyword_search(terms, filters.without_permissions(),
                                           NO_ACCESS_CANDIDATES)
        for hit in hidden:
            if filters.admits(hit.chunk):
                continue  # the caller sees it, and its own search did not answer
            own = heading_terms(hit.chunk)
            shared = own & wanted
            if shared and len(shared) >= min(MIN_HEADING_TERMS, len(own)):
                return True
        return False

    def _neighbours(
        self, top: list[Chunk], filters: SearchFilters, *, limit: int
    ) -> list[Passage]:
        ranked_ids = {c.chunk_id for c in top}
        wanted: dict[str, str] = {}  # neighbour id -> the ranked chunk it belongs to
        for links in ("related", "adjacent"):
            for chunk in top:
                n = chunk.neighbours
                ids = n.related if links == "related" else [n.previous, n.next]
                for cid in ids:
                    if cid and cid not in ranked_ids and cid not in wanted:
                        wanted[cid] = chunk.chunk_id
        if not wanted:
            return []
        found = {c.chunk_id: c for c in self.index.get_chunks(list(wanted), filters)}
        return [
            passage(
                found[cid], 0.0, via="neighbour_of", neighbour_of=owner,
                freshness=self.freshness,
            )
            for cid, owner in wanted.items()
            if cid in found
        ][:limit]


def _is_lead_in(chunk: Chunk) -> bool:
    """A document's preamble when the document has sections after it: an introduction
    that names the topic of every rule below it, rarely the rule itself."""
    return chunk.section == PREAMBLE_SLUG and chunk.neighbours.next is not None


def heading_terms(chunk: Chunk) -> set[str]:
    """The analysed terms of a chunk's title and heading path (never its text)."""
    meta = chunk.metadata
    return set(analyse("\n".join([meta.title or "", *chunk.heading_path]), meta.language))


def _coverage(terms: list[str], chunks: list[Chunk]) -> float:
    """The largest share of the question's distinct terms that one passage contains."""
    wanted = set(terms)
    if not wanted:
        return 0.0
    best = 0.0
    for chunk in chunks:
        have = set(chunk_terms(chunk).split())
        best = max(best, len(wanted & have) / len(wanted))
    return best


_MESSAGES: dict[Status, str] = {
    # The threshold refuses questions far from the library, not ones near it that it does not
    # answer (docs/search.md "The threshold goal"): the reader is told so.
    "ok": (
        "Passages ranked by relevance, best first. Ranking does not check that they answer "
        "the question: if none of them does, there is no document on it. Check each one's "
        "scope and dates before relying on it."
    ),
    "no_document": "I have no document on this.",
    "no_access": (
        "There is no document on this that you can see; a document you may not see has "
        "these words in its title or headings."
    ),
}
