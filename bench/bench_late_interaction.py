"""Would a late-interaction second stage help? Measured offline on every public set.

    .venv/bin/python bench/bench_late_interaction.py [--sets NAME,...] [--candidates 30]
        [--int8] [--json FILE] [--token-cache DIR] [--shared DIR] [--cache-dir DIR]
        [--no-timing] [--timing-questions N] [--timing-repeats N]

Tracker issue 23, item 4: "a second stage over the top 30-50 with what ships: late
interaction (the packaged encoders' token embeddings, max-sim per question token)".
docs/search.md ("Not done here") left it unbuilt for its cost; this bench measures
whether it would change the ranking at all, before anyone pays that cost.

For every set of the selection protocol (``bench_retrieval.public_sets``, each library
indexed alone in a fresh SQLite store through the project's ``Indexer``, the default
views' vectors from the bench's embedding cache, every request as of ``AS_OF``), each
row is asked of the default ``SearchService`` exactly as ``bench_retrieval.py`` asks it
(``retrieval.eval.evaluate``, threshold on). The service is the project's own with one
method wrapped: ``_rank``'s result is recorded (its fused order, scores and the views the
question was asked of) and returned unchanged, so the ``current`` row is the protocol's
own measurement (the bench checks that its ranks equal ``evaluate``'s).

The fused top ``--candidates`` (30) of each answerable row are then re-ranked. A
refused row (status not ``ok``) stays a miss in every variant: a second stage that only
reorders does not change the confidence the threshold reads.

Late interaction (ColBERT's MaxSim, with the shipped encoders as they are, not trained
for it): the last hidden state of the question and of each window (the dense view's
windows: ``embed_windows(text_to_embed(chunk), 150, 75)``), each token vector
L2-normalised, [CLS]/[SEP]/padding dropped, tokens that are punctuation only dropped,
and for bge-small the query instruction's tokens dropped from the question (it is
encoded with the instruction, as the dense leg does). A candidate scores

- ``best``: the best window's sum over question tokens of the max cosine over the
  window's tokens;
- ``pool``: the sum over question tokens of the max cosine over all its windows' tokens.

Encoders: ``minilm`` (all-MiniLM-L6-v2 int8, 256 tokens, batches of 8: its vectors do
not depend on the batch) and ``bge`` (bge-small-en-v1.5 int8, 512 tokens, one text at a
time), the latter asked only questions the shipped bge view is asked (``:en``; the
others keep the first-stage order) and, as ``bge*``, every question.

Variants, fixed before the first run (none chosen on a set):

- ``li``: late interaction alone over the candidates (ties: first-stage order);
- ``rrf``: reciprocal rank fusion of the first-stage rank and the late-interaction rank,
  ``1/(k + r)``, k the service's (``DEFAULT_RRF_K``);
- ``mixW``: ``W * minmax(late interaction) + (1 - W) * minmax(fused score)`` over the
  candidates, W in 0.3, 0.5, 0.7;
- ``rrf3``: RRF of the first stage, MiniLM's and bge's (``:en``) late-interaction ranks.

Each variant is judged against ``current`` by ``retrieval_protocol.keep_rule``.
``--int8`` scores the passages' token matrices as an int8 copy with a float32 scale per
token row would give them back (what the cheapest stored form would rank).

Token matrices are cached on disk (float16, key ``sha256(model id, kind, text)``) under
``--token-cache`` (``/tmp/late-interaction-tokens``), so a second run encodes nothing;
every score is computed from the float16 copy, first run or not, so runs agree. The
timing section encodes the candidate windows of a few questions again without the cache
(what a query-time second stage would pay), and the storage section tokenises every
window of every library (what a stored token matrix per window would take).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_retrieval import (  # noqa: E402
    AS_OF,
    CACHE_DIR,
    SHARED,
    Library,
    QuestionSet,
    commit,
    documents,
    fresh_index,
    index_library,
    make_views,
    missing_files,
    public_sets,
    ranking,
)
from bench.retrieval_protocol import KS, RunReport, SetResult, keep_rule, mean  # noqa: E402
from chunker.model import Chunk  # noqa: E402
from embeddings.backfill import reembed  # noqa: E402
from embeddings.cache import CachedEncoder  # noqa: E402
from embeddings.cache_sqlite import SQLiteEmbeddingCache  # noqa: E402
from embeddings.onnx_encoder import HIDDEN_OUTPUT, OnnxSentenceEncoder  # noqa: E402
from embeddings.registry import encoder_by_name  # noqa: E402
from embeddings.views import DEFAULT_VIEWS, DenseView, parse_view_specs  # noqa: E402
from retrieval.eval import QaRow, evaluate, first_hit_rank, load_rows  # noqa: E402
from retrieval.fusion import DEFAULT_RRF_K  # noqa: E402
from retrieval.provenance import passage  # noqa: E402
from retrieval.service import SearchService  # noqa: E402
from store.search_index import SearchFilters  # noqa: E402
from store.search_terms import embed_windows, text_to_embed  # noqa: E402
from store.sqlite_schema import MISSING_VECTORS  # noqa: E402

Matrix = npt.NDArray[np.float32]
TOKEN_CACHE = Path(tempfile.gettempdir()) / "late-interaction-tokens"
WORDS, STRIDE = 150, 75  # the default views' windows (DEFAULT_VIEWS)
MIX_WEIGHTS = (0.3, 0.5, 0.7)
_PUNCTUATION = re.compile(r"^(?:##)?[^\w\s]+$")
DIM = 384


# -- token matrices ------------------------------------------------------------------

class TokenCache:
    """float16 token matrices on disk, by sha256(model id, kind, text)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(directory / "tokens.sqlite3")
        self._db.execute("CREATE TABLE IF NOT EXISTS t (key TEXT PRIMARY KEY, n INTEGER, "
                         "dim INTEGER, data BLOB)")

    @staticmethod
    def key(model_id: str, kind: str, text: str) -> str:
        return hashlib.sha256(f"{model_id}\0{kind}\0{text}".encode()).hexdigest()

    def get(self, key: str) -> Matrix | None:
        row = self._db.execute("SELECT n, dim, data FROM t WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        n, dim, data = row
        return np.frombuffer(data, dtype=np.float16).reshape(n, dim).astype(np.float32)

    def put(self, items: dict[str, Matrix]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO t VALUES (?, ?, ?, ?)",
            [(k, m.shape[0], m.shape[1], m.astype(np.float16).tobytes())
             for k, m in items.items()])
        self._db.commit()

    def close(self) -> None:
        self._db.close()


@dataclass
class TokenEncoder:
    """Per-token vectors of one shipped ONNX encoder (its tokenizer, session and prefixes)."""

    name: str
    encoder: OnnxSentenceEncoder
    cache: TokenCache | None
    memory: dict[str, Matrix] = field(default_factory=dict)
    encoded: int = 0  # windows run through the graph (cache misses)
    seconds: float = 0.0  # spent running them (tokenising included)

    @property
    def batch(self) -> int:
        return self.encoder.batch_size

    def question(self, text: str) -> Matrix:
        return self._matrices([text], "query")[0]

    def windows(self, texts: Sequence[str]) -> list[Matrix]:
        return self._matrices(texts, "passage")

    def _matrices(self, texts: Sequence[str], kind: str) -> list[Matrix]:
        model_id = self.encoder.model_id
        keys = [TokenCache.key(model_id, kind, t) for t in texts]
        out: dict[str, Matrix] = {}
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts, strict=True):
            found = self.memory.get(key)
            if found is None and self.cache is not None:
                found = self.cache.get(key)
            if found is None:
                missing[key] = text
            else:
                out[key] = found
        if missing:
            started = time.perf_counter()
            fresh = self.compute(list(missing.values()), kind)
            self.seconds += time.perf_counter() - started
            self.encoded += len(missing)
            # round through float16 so a first run scores what a cached run reads
            made = {k: m.astype(np.float16).astype(np.float32)
                    for k, m in zip(missing, fresh, strict=True)}
            if self.cache is not None:
                self.cache.put(made)
            out.update(made)
        self.memory.update(out)
        return [out[k] for k in keys]

    def compute(self, texts: Sequence[str], kind: str) -> list[Matrix]:
        """The kept tokens' unit vectors of each text, no cache."""
        enc = self.encoder
        prefix = enc.prefix("query" if kind == "query" else "passage")
        # the encoder's own tokenizer (truncation at its max_length), session and inputs
        tokenizer = enc._tokenizer
        session = enc._session
        inputs = enc._inputs
        encodings = tokenizer.encode_batch([prefix + t for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out: list[Matrix | None] = [None] * len(texts)
        for start in range(0, len(order), self.batch):
            rows = order[start:start + self.batch]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                ids[r, :len(encodings[i].ids)] = encodings[i].ids
                mask[r, :len(encodings[i].ids)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = np.asarray(session.run([HIDDEN_OUTPUT], feeds)[0], dtype=np.float32)
            for r, i in enumerate(rows):
                e = encodings[i]
                keep = [t for t, (tok, special, (begin, _)) in enumerate(
                    zip(e.tokens, e.special_tokens_mask, e.offsets, strict=True))
                    if not special and not _PUNCTUATION.match(tok)
                    and (kind != "query" or begin >= len(prefix))]
                vectors = hidden[r, keep, :] if keep else hidden[r, :1, :]
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                out[i] = (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)
        return [m for m in out if m is not None]

    def kept_tokens(self, text: str) -> tuple[int, int]:
        """(tokens the graph reads incl. [CLS]/[SEP], tokens a stored matrix would keep)."""
        e = self.encoder._tokenizer.encode(text)
        kept = sum(1 for tok, special in zip(e.tokens, e.special_tokens_mask, strict=True)
                   if not special and not _PUNCTUATION.match(tok))
        return len(e.ids), kept


def int8_round_trip(matrix: Matrix) -> Matrix:
    """``matrix`` as an int8 copy would give it back: one float32 scale a token row
    (max |value| / 127), values rounded to int8."""
    scale = np.clip(np.abs(matrix).max(axis=1, keepdims=True) / 127.0, 1e-12, None)
    back: Matrix = (np.round(matrix / scale).clip(-127, 127) * scale).astype(np.float32)
    return back


def max_sim(question: Matrix, windows: Sequence[Matrix]) -> tuple[float, float]:
    """(best window's score, all windows pooled): sums over question tokens of the max
    cosine."""
    sims = [question @ w.T for w in windows]  # (question tokens, window tokens) each
    best = max(float(s.max(axis=1).sum()) for s in sims)
    pooled = float(np.max(np.stack([s.max(axis=1) for s in sims]), axis=0).sum())
    return best, pooled


# -- the first stage, recorded -------------------------------------------------------

@dataclass(frozen=True)
class FirstStage:
    chunks: list[Chunk]  # the fused order, the first ``candidates``
    scores: list[float]  # their fused scores
    views: tuple[str, ...]  # view ids the question was asked of


class RecordingService(SearchService):
    """The default ``SearchService``; each ``_rank`` result is recorded, unchanged."""

    def __init__(self, *args: Any, candidates_kept: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.candidates_kept = candidates_kept
        self.recorded: list[FirstStage] = []

    def _rank(self, question: str, terms: list[str], vector: Callable[[], Any],
              filters: SearchFilters, k: int, *, views: Sequence[DenseView]) -> Any:
        ranked = super()._rank(question, terms, vector, filters, k, views=views)
        top = ranked.chunks[:self.candidates_kept]
        self.recorded.append(FirstStage(top, [ranked.scores.get(c.chunk_id, 0.0) for c in top],
                                        tuple(v.view_id for v in views)))
        return ranked


@dataclass
class Row:
    """One answerable row: its first stage and what late interaction says of it."""

    qa: QaRow
    ok: bool  # status ok (not refused)
    first: FirstStage
    current_rank: int | None  # evaluate's rank (the protocol's)
    asked_bge: bool
    hits: list[bool] = field(default_factory=list)  # per candidate, the eval's hit rule
    li: dict[str, list[float]] = field(default_factory=dict)  # "minilm:best" -> scores


# -- the variants ---------------------------------------------------------------------

def rrf_order(ranks: Sequence[Sequence[int]], k: int = DEFAULT_RRF_K) -> list[int]:
    """Candidates (indices) by the sum of 1/(k + rank) over the given rankings."""
    n = len(ranks[0])
    score = [sum(1.0 / (k + r[i]) for r in ranks) for i in range(n)]
    return sorted(range(n), key=lambda i: (-score[i], i))


def ranks_of(scores: Sequence[float]) -> list[int]:
    """1-based rank of each candidate by score (ties: first-stage order)."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    out = [0] * len(scores)
    for r, i in enumerate(order, start=1):
        out[i] = r
    return out


def minmax(values: Sequence[float]) -> list[float]:
    lo, hi = min(values), max(values)
    return [0.0 if hi <= lo else (v - lo) / (hi - lo) for v in values]


def variant_names() -> list[str]:
    names = ["current"]
    for enc in ("minilm", "bge", "bge*"):
        for agg in ("best", "pool"):
            names += [f"li {enc} {agg}", f"rrf {enc} {agg}",
                      *(f"mix{w} {enc} {agg}" for w in MIX_WEIGHTS)]
    names += ["rrf3 best", "rrf3 pool"]
    return names


def order_for(name: str, row: Row) -> list[int]:
    """The candidates' order (indices into the first stage) of variant ``name``."""
    n = len(row.first.chunks)
    first = list(range(n))
    if name == "current" or n == 0:
        return first
    kind, *rest = name.split(" ")
    if kind == "rrf3":
        agg = rest[0]
        ranks = [[i + 1 for i in first], ranks_of(row.li[f"minilm:{agg}"])]
        if row.asked_bge:
            ranks.append(ranks_of(row.li[f"bge:{agg}"]))
        return rrf_order(ranks)
    enc, agg = rest
    if enc == "bge" and not row.asked_bge:
        return first  # the shipped bge view is asked English questions only
    li = row.li[f"{enc.rstrip('*')}:{agg}"]
    if kind == "li":
        return sorted(first, key=lambda i: (-li[i], i))
    if kind == "rrf":
        return rrf_order([[i + 1 for i in first], ranks_of(li)])
    weight = float(kind.removeprefix("mix"))
    mixed = [weight * a + (1 - weight) * b
             for a, b in zip(minmax(li), minmax(row.first.scores), strict=True)]
    return sorted(first, key=lambda i: (-mixed[i], i))


def rank_in(order: Sequence[int], row: Row) -> int | None:
    """1-based rank of the first hit within the first max(KS) of ``order`` (refused: None)."""
    if not row.ok:
        return None
    for r, i in enumerate(order[:max(KS)], start=1):
        if row.hits[i]:
            return r
    return None


# -- one library -----------------------------------------------------------------------

@dataclass
class SetRun:
    qs: QuestionSet
    documents: int
    chunks: int
    rows: list[Row]
    unanswerable: int
    unanswerable_refused: int
    answerable_refused: int


def library_windows(db: Path) -> list[str]:
    """Every window of every live chunk of the SQLite index at ``db`` (read-only)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        bodies = con.execute(MISSING_VECTORS, {"model_id": ""}).fetchall()
    finally:
        con.close()
    out: list[str] = []
    for _, body, _ in bodies:
        out += embed_windows(text_to_embed(Chunk.model_validate_json(body)), WORDS, STRIDE)
    return out


def run_library(library: Library, sets: Sequence[QuestionSet], views: Sequence[DenseView],
                tokens: dict[str, TokenEncoder], *, candidates: int, tmp: Path,
                storage: dict[str, Any], int8: bool = False) -> list[SetRun]:
    started = time.perf_counter()
    docs = documents(library)
    runs: list[SetRun] = []
    bge_view = next((v.view_id for v in views if v.model_id.startswith("bge")), None)
    with fresh_index("sqlite", tmp, "", library.name) as (store, search):
        chunks = index_library(store, docs, library.kind)
        for view in views:
            assert isinstance(view.encoder, CachedEncoder)
            reembed(search, view.encoder, progress=False, batch_size=64, view_id=view.view_id,
                    windows=view.windows)
        every_window = library_windows(tmp / f"{library.name}.sqlite3")
        storage[library.name] = storage_of(every_window, tokens, chunks)
        service = RecordingService(search, None, views=views, candidates_kept=candidates)
        try:
            for qs in sets:
                rows = load_rows(qs.qa)
                service.recorded.clear()
                report = evaluate(service, rows, qs.profiles, KS, as_of=AS_OF)
                assert len(service.recorded) == len(rows)
                answerable = []
                for qa, result, first in zip(rows, report.rows, service.recorded, strict=True):
                    if not qa.answerable:
                        continue
                    answerable.append(Row(qa, result.status == "ok", first, result.rank,
                                          bge_view is not None and bge_view in first.views))
                runs.append(SetRun(qs, len(docs), chunks, answerable, report.unanswerable,
                                   report.unanswerable_refused, report.answerable_refused))
        finally:
            service.close()
    for run in runs:
        for row in run.rows:
            score_row(row, tokens, int8=int8)
            check = rank_in(order_for("current", row), row)
            if check != row.current_rank:
                raise RuntimeError(f"{row.qa.id}: recorded first stage ranks its hit at "
                                   f"{check}, evaluate at {row.current_rank}")
    print(f"{library.name}: {len(docs)} documents, {chunks} chunks, "
          f"{sum(len(r.rows) for r in runs)} answerable rows, "
          f"{time.perf_counter() - started:.0f} s, "
          + ", ".join(f"{t.name} {t.encoded} windows encoded in {t.seconds:.0f} s"
                      for t in tokens.values()), file=sys.stderr, flush=True)
    return runs


def score_row(row: Row, tokens: dict[str, TokenEncoder], *, int8: bool = False) -> None:
    passages = [passage(c, s) for c, s in zip(row.first.chunks, row.first.scores, strict=True)]
    row.hits = [first_hit_rank(row.qa, [p]) == 1 for p in passages]
    cut = [embed_windows(text_to_embed(c), WORDS, STRIDE) for c in row.first.chunks]
    for name, enc in tokens.items():
        q = enc.question(row.qa.question)
        flat = enc.windows([w for ws in cut for w in ws])
        if int8:  # what a stored int8 token matrix would score
            flat = [int8_round_trip(m) for m in flat]
        at, best, pooled = 0, [], []
        for ws in cut:
            b, p = max_sim(q, flat[at:at + len(ws)])
            at += len(ws)
            best.append(b)
            pooled.append(p)
        row.li[f"{name}:best"], row.li[f"{name}:pool"] = best, pooled


# -- cost ------------------------------------------------------------------------------

def storage_of(windows: Sequence[str], tokens: dict[str, TokenEncoder],
               chunks: int) -> dict[str, Any]:
    """What a stored token matrix per window would take, per encoder: tokens kept x 384."""
    out: dict[str, Any] = {"chunks": chunks, "windows": len(windows)}
    for name, enc in tokens.items():
        counts = [enc.kept_tokens(w) for w in windows]
        kept = sum(k for _, k in counts)
        out[name] = {
            "tokens_read_mean": round(sum(r for r, _ in counts) / max(len(counts), 1), 1),
            "tokens_kept_mean": round(kept / max(len(counts), 1), 1),
            "tokens_kept_max": max((k for _, k in counts), default=0),
            # int8: one byte a value and a float32 scale a token row
            "bytes": {"float32": kept * DIM * 4, "float16": kept * DIM * 2,
                      "int8": kept * (DIM + 4)},
            "pooled_vectors_now_bytes": len(windows) * DIM * 4,
        }
    return out


def timing(runs: Sequence[SetRun], tokens: dict[str, TokenEncoder],
           questions: int, repeats: int) -> dict[str, Any]:
    """The candidates' windows of the first ``questions`` rows, encoded again without any
    cache, ``repeats`` times: what a query-time second stage would pay."""
    rows = [r for run in runs for r in run.rows][:questions]
    out: dict[str, Any] = {"questions": [r.qa.id for r in rows], "repeats": repeats,
                           "load_before": os.getloadavg()}
    for name, enc in tokens.items():
        per_window, per_question = [], []
        for row in rows:
            texts = [w for c in row.first.chunks
                     for w in embed_windows(text_to_embed(c), WORDS, STRIDE)]
            for _ in range(repeats):
                started = time.perf_counter()
                enc.compute(texts, "passage")
                took = time.perf_counter() - started
                per_question.append((len(texts), took))
                per_window.append(took / len(texts) * 1000)
        sample = enc.windows([w for c in rows[0].first.chunks
                              for w in embed_windows(text_to_embed(c), WORDS, STRIDE)])
        q = enc.question(rows[0].qa.question)
        started = time.perf_counter()
        for _ in range(20):
            max_sim(q, sample)
        out[name] = {
            "ms_per_window_median": round(float(np.median(per_window)), 1),
            "ms_per_window_min": round(min(per_window), 1),
            "ms_per_window_max": round(max(per_window), 1),
            "s_per_question": [[n, round(s, 2)] for n, s in per_question],
            "maxsim_ms_for_all_windows_of_one_question": round(
                (time.perf_counter() - started) / 20 * 1000, 2),
        }
    out["load_after"] = os.getloadavg()
    return out


# -- report ----------------------------------------------------------------------------

def report_for(name: str, runs: Sequence[SetRun]) -> RunReport:
    report = RunReport(date.today().isoformat(), "bench/bench_late_interaction.py",
                       {"variant": name}, commit())
    for run in runs:
        ours = ranking({r.qa.id: rank_in(order_for(name, r), r) for r in run.rows})
        report.sets[run.qs.name] = SetResult(
            run.qs.name, run.qs.library.name, run.documents, run.chunks, len(run.rows),
            run.unanswerable, ours, ours, run.unanswerable_refused, run.answerable_refused,
            None, 0, 0.0, 0.0)
    return report


def render(reports: dict[str, RunReport]) -> str:
    current = reports["current"]
    sets = list(current.sets)
    head = ("| variant | " + " | ".join(f"{s} r@1/3/5/10 MRR" for s in sets)
            + " | mean r@5 | mean MRR | verdict against current |")
    lines = [head, "|" + "---|" * (len(sets) + 4)]
    for name, rep in reports.items():
        cells = []
        for s in sets:
            r = rep.sets[s].ours
            cells.append("/".join(str(r.hits[k]) for k in KS) + f" {r.mrr:.3f}")
        mrr = mean([rep.sets[s].ours.mrr for s in sets]) or 0.0
        verdict = "-" if name == "current" else str(keep_rule(current, rep))
        lines.append(f"| {name} | " + " | ".join(cells)
                     + f" | {rep.mean_recall_at_5 or 0.0:.3f} | {mrr:.3f} | {verdict} |")
    answerable = ", ".join(f"{s} {current.sets[s].answerable}" for s in sets)
    lines.append(f"\nanswerable rows: {answerable}")
    return "\n".join(lines)


def moved(reports: dict[str, RunReport]) -> list[str]:
    """Per variant, the rows that entered (+) or left (-) the top 5 against current."""
    before = reports["current"]
    out = []
    for name, rep in reports.items():
        if name == "current":
            continue
        plus, minus = [], []
        for s, res in rep.sets.items():
            for q, r in res.ours.ranks.items():
                b = before.sets[s].ours.ranks[q]
                now, then = r is not None and r <= 5, b is not None and b <= 5
                if now and not then:
                    plus.append(q)
                elif then and not now:
                    minus.append(q)
        out.append(f"{name}: " + " ".join([f"+{q}" for q in plus] + [f"-{q}" for q in minus]))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--shared", default=str(SHARED))
    parser.add_argument("--sets", help="comma-separated subset (the rule needs them all)")
    parser.add_argument("--candidates", type=int, default=30,
                        help="how many of the fused top are re-ranked")
    parser.add_argument("--cache-dir", default=str(CACHE_DIR),
                        help="the passage vectors of bench_retrieval.py (the first stage)")
    parser.add_argument("--token-cache", default=str(TOKEN_CACHE),
                        help="where token matrices are kept between runs")
    parser.add_argument("--no-token-cache", action="store_true")
    parser.add_argument("--int8", action="store_true",
                        help="score passages' token matrices as stored in int8 (a scale a row)")
    parser.add_argument("--timing-questions", type=int, default=3)
    parser.add_argument("--timing-repeats", type=int, default=2)
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--json", metavar="FILE", help="write every figure as JSON to FILE")
    args = parser.parse_args(argv)

    every = public_sets(Path(args.shared))
    names = ([n.strip() for n in args.sets.split(",") if n.strip()] if args.sets
             else [qs.name for qs in every])
    unknown = sorted(set(names) - {qs.name for qs in every})
    if unknown:
        parser.error(f"--sets: unknown {unknown}")
    skipped: dict[str, str] = {}
    by_library: dict[Library, list[QuestionSet]] = {}
    for qs in every:
        if qs.name not in names:
            continue
        why = missing_files(qs, Path(args.shared))
        if why is not None:
            skipped[qs.name] = why
        else:
            by_library.setdefault(qs.library, []).append(qs)

    vector_cache = SQLiteEmbeddingCache.in_dir(Path(args.cache_dir))
    token_cache = None if args.no_token_cache else TokenCache(Path(args.token_cache))
    specs = parse_view_specs(DEFAULT_VIEWS)
    encoders = {s.name: CachedEncoder(encoder_by_name(s.name), vector_cache) for s in specs}
    views = make_views(DEFAULT_VIEWS, encoders)
    tokens: dict[str, TokenEncoder] = {}
    for short, name in (("minilm", "minilm"), ("bge", "bge-small")):
        raw = encoders[name].encoder
        assert isinstance(raw, OnnxSentenceEncoder)
        tokens[short] = TokenEncoder(short, raw, token_cache)

    started = time.perf_counter()
    load_start = os.getloadavg()
    runs: list[SetRun] = []
    storage: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for library, sets in by_library.items():
                runs += run_library(library, sets, views, tokens, candidates=args.candidates,
                                    tmp=Path(tmp), storage=storage, int8=args.int8)
        cost = None if args.no_timing else timing(
            [r for r in runs if r.qs.library.name == "mozilla"] or runs, tokens,
            args.timing_questions, args.timing_repeats)
    finally:
        vector_cache.close()
        if token_cache is not None:
            token_cache.close()
    runs.sort(key=lambda r: names.index(r.qs.name))
    reports = {name: report_for(name, runs) for name in variant_names()}
    print(render(reports))
    print("\nrows that entered (+) or left (-) the top 5, against current:")
    print("\n".join(moved(reports)))
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    encoding = {t.name: {"windows_encoded": t.encoded, "seconds": round(t.seconds, 1),
                         "ms_per_window": round(t.seconds / t.encoded * 1000, 1)
                         if t.encoded else None} for t in tokens.values()}
    summary = {"load_start": load_start, "load_end": os.getloadavg(),
               "wall_s": round(time.perf_counter() - started, 1), "encoding_in_run": encoding}
    print(f"\nrun: {json.dumps(summary)}")
    print(f"storage: {json.dumps(storage)}")
    if cost is not None:
        print(f"query-time cost: {json.dumps(cost)}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({
            "command": shlex.join(["bench/bench_late_interaction.py", *sys.argv[1:]]),
            "date": date.today().isoformat(), "commit": commit(),
            "candidates": args.candidates, "int8": args.int8, "skipped": skipped, "run": summary,
            "storage": storage, "query_time_cost": cost,
            "variants": {n: r.to_dict() for n, r in reports.items()},
            "verdicts": {n: str(keep_rule(reports["current"], r))
                         for n, r in reports.items() if n != "current"},
        }, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
