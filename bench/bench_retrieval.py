"""Recall of search_policy on the basecamp QA set, beside BM25 over LangChain header chunks.

    .venv/bin/python bench/bench_retrieval.py [--store sqlite|memory|elasticsearch]
        [--encoder minilm|hashing|none] [--json]

1. The library: ``../shared/corpora/basecamp-policies.jsonl`` replayed (the last
   upsert of a document wins, a delete removes it), each final version chunked
   by our chunker and written to a fresh store with its document state; the
   vectors of every chunk encoded and stored (as the backfill would).
2. The questions: ``../shared/eval/basecamp-qa.jsonl``. A hit at k: one of the
   first k *ranked* passages is of the row's document and contains its evidence
   after collapsing whitespace (the set's README). Neighbours never count.
3. The baseline, same run: LangChain ``MarkdownHeaderTextSplitter`` chunks of
   the same final bodies (front matter removed), ranked by ``rank_bm25``'s
   BM25Okapi over lowercased words.
4. Variants of ours: keyword leg only, dense leg only, fused at several RRF
   constants; the threshold swept over the confidence (no-document rate on the
   10 unanswerable rows against unnecessary refusals: a row whose evidence was
   in the top 5 but the answer was refused).
5. Latency of ``SearchService.search`` (query encoding included), p50/p95.

Everything is measured on this one library; the ranking has no knowledge of
its questions (nothing here tunes a term or a document).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
from langchain_text_splitters import MarkdownHeaderTextSplitter
from rank_bm25 import BM25Okapi

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chunker import chunk_document  # noqa: E402
from chunker.model import Chunk  # noqa: E402
from embeddings.encoder import Encoder, TextKind, Vectors  # noqa: E402
from embeddings.hashing import HashingEncoder  # noqa: E402
from embeddings.minilm import MiniLMEncoder  # noqa: E402
from retrieval.models import SearchRequest  # noqa: E402
from retrieval.service import SearchService  # noqa: E402
from store.elasticsearch import ElasticsearchStore  # noqa: E402
from store.es_search import ElasticsearchSearchIndex  # noqa: E402
from store.memory import InMemoryStore  # noqa: E402
from store.memory_search import InMemorySearchIndex  # noqa: E402
from store.model import DocumentState  # noqa: E402
from store.sqlite import SQLiteStore  # noqa: E402
from store.sqlite_search import SQLiteSearchIndex  # noqa: E402

SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpora" / "basecamp-policies.jsonl"
QA = SHARED / "eval" / "basecamp-qa.jsonl"
KS = (1, 3, 5, 10)
RRF_KS = (1, 5, 10, 20, 60)
_SPACE = re.compile(r"\s+")
_FRONT = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.S)
_WORD = re.compile(r"\w+")


def collapse(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def final_library(path: Path) -> dict[str, dict[str, Any]]:
    docs: dict[str, dict[str, Any]] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            if event["action"] == "delete":
                docs.pop(event["document_id"], None)
            else:
                docs[event["document_id"]] = event
    return docs


class MemoEncoder:
    """Remembers query vectors, so the variants encode each question once."""

    def __init__(self, inner: Encoder) -> None:
        self.inner = inner
        self.memo: dict[tuple[str, str], Any] = {}

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts: Sequence[str], *, kind: TextKind = "passage") -> Vectors:
        missing = [t for t in texts if (kind, t) not in self.memo]
        if missing:
            for t, v in zip(missing, self.inner.encode(missing, kind=kind), strict=True):
                self.memo[(kind, t)] = v
        return np.asarray([self.memo[(kind, t)] for t in texts], dtype=np.float32)


def make_encoder(name: str) -> Encoder | None:
    if name == "none":
        return None
    if name == "hashing":
        return HashingEncoder()
    return MiniLMEncoder()


def make_index(kind: str, tmp: Path, url: str) -> tuple[Any, Any, Callable[[], None]]:
    if kind == "memory":
        mem = InMemoryStore()
        return mem, InMemorySearchIndex(mem), lambda: None
    if kind == "sqlite":
        lite = SQLiteStore(tmp / "bench.sqlite3")
        lite.ensure_ready()
        return lite, SQLiteSearchIndex(lite), lite.close
    es = ElasticsearchStore.connect(url, f"bench-{uuid.uuid4().hex[:8]}")
    es.ensure_ready()

    def done() -> None:
        es.delete_everything()
        es.close()

    return es, ElasticsearchSearchIndex(es), done


def load(store: Any, docs: dict[str, dict[str, Any]]) -> list[Chunk]:
    chunks: list[Chunk] = []
    now = datetime.now(UTC)
    for doc_id, event in sorted(docs.items()):
        changed = datetime.fromisoformat(event["changed_at"].replace("Z", "+00:00"))
        mine = chunk_document(
            doc_id, event["version"], event["content"],
            metadata={"source_path": event.get("path")}, changed_at=changed,
        )
        store.write_chunks(mine)
        store.put_state(DocumentState(
            doc_id, event["version"], changed, now, tuple(c.chunk_id for c in mine)
        ))
        chunks += mine
    store.refresh()
    return chunks


def backfill(search: Any, encoder: Encoder, store: Any) -> float:
    started = time.perf_counter()
    while True:
        batch = search.chunks_missing_vectors(encoder.model_id, 64)
        if not batch:
            break
        vectors = encoder.encode([text for _, text in batch], kind="passage")
        search.put_vectors(encoder.model_id, {
            cid: vec for (cid, _), vec in zip(batch, vectors, strict=True)
        })
        store.refresh()
    return time.perf_counter() - started


@dataclass
class Outcome:
    row: dict[str, Any]
    ranks: list[tuple[str, str]]  # (document_id, collapsed text) of ranked passages
    confidence: float | None
    status: str

    def hit_at(self, k: int) -> bool:
        evidence = collapse(self.row["evidence"])
        return any(d == self.row["document_id"] and evidence in t for d, t in self.ranks[:k])

    def first_hit(self) -> int | None:
        for k in range(1, len(self.ranks) + 1):
            if self.hit_at(k):
                return k
        return None


def run_ours(svc: SearchService, rows: list[dict[str, Any]]) -> tuple[list[Outcome], list[float]]:
    outcomes, latency = [], []
    for row in rows:
        request = SearchRequest(question=row["question"], k=10, neighbours=False)
        started = time.perf_counter()
        response = svc.search(request, frozenset({row.get("profile") or "public"}))
        latency.append((time.perf_counter() - started) * 1000)
        ranks = [(p.document_id, collapse(p.text)) for p in response.passages]
        outcomes.append(Outcome(row, ranks, response.best_score, response.status))
    return outcomes, latency


def run_baseline(docs: dict[str, dict[str, Any]], rows: list[dict[str, Any]]) -> list[Outcome]:
    splitter = MarkdownHeaderTextSplitter(
        [("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")]
    )
    chunks: list[tuple[str, str]] = []
    for doc_id, event in sorted(docs.items()):
        body = _FRONT.sub("", event["content"], count=1)
        chunks += [(doc_id, part.page_content) for part in splitter.split_text(body)]
    bm25 = BM25Okapi([_WORD.findall(text.lower()) for _, text in chunks])
    outcomes = []
    for row in rows:
        scores = bm25.get_scores(_WORD.findall(row["question"].lower()))
        order = sorted(range(len(chunks)), key=lambda i: -scores[i])[:10]
        ranks = [(chunks[i][0], collapse(chunks[i][1])) for i in order]
        outcomes.append(Outcome(row, ranks, float(scores[order[0]]), "ok"))
    return outcomes


def recall(outcomes: list[Outcome]) -> dict[str, Any]:
    answerable = [o for o in outcomes if o.row["document_id"]]
    result: dict[str, Any] = {f"r@{k}": sum(o.hit_at(k) for o in answerable) for k in KS}
    ranks = [o.first_hit() for o in answerable]
    result["mrr"] = round(sum(1 / r for r in ranks if r) / len(answerable), 3)
    result["n"] = len(answerable)
    kinds: dict[str, list[int]] = {}
    for o in answerable:
        kinds.setdefault(o.row["kind"], []).append(int(o.hit_at(5)))
    result["r@5 by kind"] = {k: f"{sum(v)}/{len(v)}" for k, v in sorted(kinds.items())}
    return result


def threshold_sweep(outcomes: list[Outcome], thresholds: Sequence[float]) -> list[dict[str, Any]]:
    unanswerable = [o for o in outcomes if not o.row["document_id"]]
    answerable = [o for o in outcomes if o.row["document_id"]]
    table = []
    for t in thresholds:
        refused = sum((o.confidence or 0.0) < t for o in unanswerable)
        unnecessary = sum((o.confidence or 0.0) < t and o.hit_at(5) for o in answerable)
        kept = sum((o.confidence or 0.0) >= t and o.hit_at(5) for o in answerable)
        table.append({"threshold": round(t, 3), "refused unanswerable": refused,
                      "of": len(unanswerable), "unnecessary refusals": unnecessary,
                      "r@5 after threshold": kept})
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "memory", "elasticsearch"),
                        default="sqlite")
    parser.add_argument("--encoder", choices=("minilm", "hashing", "none"), default="minilm")
    parser.add_argument("--elasticsearch", default="http://127.0.0.1:9200")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="change log (.jsonl[.gz])")
    parser.add_argument("--qa", type=Path, nargs="+", default=[QA],
                        help="question sets (each reported on its own)")
    parser.add_argument("--scale", type=int, default=0,
                        help="latency only: copies of the library up to N chunks")
    args = parser.parse_args()
    if args.scale:
        scale(args)
        return

    docs = final_library(args.corpus)
    if len(args.qa) > 1 or args.qa[0] != QA:
        per_set(args, docs)
        return
    rows = [json.loads(line) for line in QA.read_text(encoding="utf-8").splitlines() if line]
    report: dict[str, Any] = {"store": args.store, "encoder": args.encoder,
                              "documents": len(docs), "questions": len(rows),
                              "date": date.today().isoformat()}
    with tempfile.TemporaryDirectory() as tmp:
        store, search, close = make_index(args.store, Path(tmp), args.elasticsearch)
        try:
            started = time.perf_counter()
            chunks = load(store, docs)
            report["chunks"] = len(chunks)
            report["index_s"] = round(time.perf_counter() - started, 2)
            inner = make_encoder(args.encoder)
            encoder = MemoEncoder(inner) if inner is not None else None
            if encoder is not None:
                report["encoder_model"] = encoder.model_id
                report["backfill_s"] = round(backfill(search, encoder, store), 1)

            variants: dict[str, SearchService] = {
                "keyword only": SearchService(search, None, keyword_threshold=0.0),
            }
            if encoder is not None:
                dense_only = SearchService(search, encoder, threshold=-1.0)
                dense_only._legs = _dense_leg_only(dense_only)  # type: ignore[method-assign]
                variants["dense only"] = dense_only
                for k in RRF_KS:
                    variants[f"fused rrf k={k}"] = SearchService(
                        search, encoder, threshold=-1.0, rrf_k=k
                    )
            results: dict[str, Any] = {}
            all_outcomes: dict[str, list[Outcome]] = {}
            for name, svc in variants.items():
                outcomes, latency = run_ours(svc, rows)
                all_outcomes[name] = outcomes
                results[name] = {**recall(outcomes),
                                 "p50_ms": round(statistics.median(latency), 1),
                                 "p95_ms": round(sorted(latency)[int(0.95 * len(latency)) - 1], 1)}
            baseline = run_baseline(docs, rows)
            results["baseline: BM25 over LangChain header chunks"] = recall(baseline)
            report["results"] = results
            chosen = "fused rrf k=10" if encoder is not None else "keyword only"
            grid = [i / 100 for i in range(0, 80, 2)] if encoder else [i / 20 for i in range(21)]
            report["threshold sweep (" + chosen + ")"] = threshold_sweep(
                all_outcomes[chosen], grid
            )
            if encoder is not None:  # latency with the query encoder really running
                fresh = SearchService(search, make_encoder(args.encoder))
                _, latency = run_ours(fresh, rows)
                report["latency with query encoding"] = {
                    "p50_ms": round(statistics.median(latency), 1),
                    "p95_ms": round(sorted(latency)[int(0.95 * len(latency)) - 1], 1),
                }
        finally:
            close()
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for key, value in report.items():
        if key == "results":
            for name, res in value.items():
                print(f"{name:48s} {json.dumps(res)}")
        elif isinstance(value, list):
            print(key)
            for line in value:
                print("   ", json.dumps(line))
        else:
            print(f"{key}: {value}")


def per_set(args: argparse.Namespace, docs: dict[str, dict[str, Any]]) -> None:
    """Recall per question set (per language) on one library, beside the baseline."""
    inner = make_encoder(args.encoder)
    with tempfile.TemporaryDirectory() as tmp:
        store, search, close = make_index(args.store, Path(tmp), args.elasticsearch)
        try:
            chunks = load(store, docs)
            print(f"{args.corpus.name}: {len(docs)} documents, {len(chunks)} chunks")
            if inner is not None:
                print(f"  vectors backfilled in {backfill(search, inner, store):.0f} s")
            svc = SearchService(search, inner, threshold=-1.0, keyword_threshold=0.0)
            for path in args.qa:
                rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]
                ours, latency = run_ours(svc, rows)
                print(f"  {path.name:28s} ours     {json.dumps(recall(ours))}  "
                      f"p50 {statistics.median(latency):.0f} ms")
                print(f"  {'':28s} baseline {json.dumps(recall(run_baseline(docs, rows)))}")
        finally:
            close()


def scale(args: argparse.Namespace) -> None:
    """Latency at N chunks: the library copied under new document ids, vectors with noise.

    Beside it, in the same run, the bare keyword query of the store (FTS5 MATCH, or an
    Elasticsearch match query) with no filter and no fusion.
    """
    docs = final_library(CORPUS)
    rows = [json.loads(line) for line in QA.read_text(encoding="utf-8").splitlines() if line]
    inner = make_encoder(args.encoder)
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        store, search, close = make_index(args.store, Path(tmp), args.elasticsearch)
        try:
            base = load(store, docs)
            copies = max(0, args.scale // len(base) - 1)
            vectors = (
                inner.encode([c.embed_text for c in base]) if inner is not None else None
            )
            now = datetime.now(UTC)
            started = time.perf_counter()
            for n in range(copies):
                batch = [c.model_copy(update={
                    "document_id": f"{c.document_id}-copy{n}",
                    "chunk_id": c.chunk_id.replace("@", f"-copy{n}@", 1),
                }) for c in base]
                store.write_chunks(batch)
                for doc in {c.document_id for c in batch}:
                    mine = [c for c in batch if c.document_id == doc]
                    store.put_state(DocumentState(doc, mine[0].version, now, now,
                                                  tuple(c.chunk_id for c in mine)))
                if inner is not None and vectors is not None:
                    noisy = vectors + rng.normal(0, 0.02, vectors.shape).astype(np.float32)
                    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
                    search.put_vectors(inner.model_id, {
                        c.chunk_id: v for c, v in zip(batch, noisy, strict=True)})
            if inner is not None and vectors is not None:
                search.put_vectors(inner.model_id, {
                    c.chunk_id: v for c, v in zip(base, vectors, strict=True)})
            store.refresh()
            total = len(base) * (copies + 1)
            print(f"{args.store}: {total} chunks written in {time.perf_counter() - started:.0f} s")
            svc = SearchService(search, inner)
            _, latency = run_ours(svc, rows)
            _, latency = run_ours(svc, rows)  # warm
            bare = []
            for row in rows:
                t0 = time.perf_counter()
                if args.store == "elasticsearch":
                    store.client.search(index=store.names.chunks, size=10,
                                        query={"match": {"text": row["question"]}})
                elif args.store == "sqlite":
                    store.search(row["question"], access_labels=["public"], limit=10)
                bare.append((time.perf_counter() - t0) * 1000)
            for name, values in (("search_policy", latency), ("bare keyword query", bare)):
                ordered = sorted(values)
                print(f"  {name:22s} p50 {statistics.median(values):6.1f} ms   "
                      f"p95 {ordered[int(0.95 * len(ordered)) - 1]:6.1f} ms")
        finally:
            close()


def _dense_leg_only(svc: SearchService) -> Callable[..., Any]:
    original = svc._legs

    def legs(terms: list[str], vector: Any, filters: Any) -> Any:
        _, dense = original(terms, vector, filters)
        return [], dense

    return legs


if __name__ == "__main__":
    main()
