"""Search latency p50/p95 of search_policy on this machine, beside a bare keyword query.

    .venv/bin/python bench/bench_search_latency.py                       # 10k and 100k, both stores
    .venv/bin/python bench/bench_search_latency.py --sizes 10000 --stores sqlite --queries 100
    .venv/bin/python bench/bench_search_latency.py --encoder none --json
    # SQLite before/after in one run: the code at REV and the working tree, alternating
    .venv/bin/python bench/bench_search_latency.py --stores sqlite --sizes 10000 --baseline REV

1. The index: generated documents of 10 chunks, each chunk ~100 words drawn as a
   window of the basecamp library's text (real vocabulary and term frequencies,
   many near-duplicates, as a big policy library has), plus a document code.
   20% of the documents carry the label ``finance`` (the caller lacks it), 30%
   are scoped to one of 20 cities. Written through the store's own path
   (``write_chunks`` + ``put_state``: the analysed terms and filter rows are
   built as the worker builds them) to a fresh SQLite file or ES index.
2. Vectors: one random unit vector per chunk, stored under the real encoder's
   model id. Encoding 100k chunks at ~15 chunks/s would take two hours, and the
   dense leg's cost does not depend on the values (brute force reads every
   admitted vector; random vectors are a hard case for HNSW, not an easy one).
3. The questions: the basecamp and Mozilla (English) QA sets' questions, cycled,
   half of them with a city scope. The caller has labels ``public, agents``.
4. Measured per question, in this order, after a warm-up:
   - ``search``: ``SearchService.search`` with the real MiniLM encoder (the query
     encoding is included), threshold off, so every answer is ``ok`` with its
     passages and neighbours (the common path);
   - ``refused``: the same with the threshold above any score, so every answer
     is ``no_document`` after the second, permission-free run that tells it from
     ``no_access`` (the slow path, reported beside);
   - ``encode``: the query encoding alone;
   - ``bare``: SQLite: FTS5 ``MATCH`` of the question's words over the chunks'
     text, BM25, top 5; Elasticsearch: one ``match`` query on ``text``, top 5.
     Neither has filters, analysis, a dense leg or fusion: the floor.
5. ``--baseline REV`` (SQLite): the same file is searched by the code at git
   revision REV and by the working tree, each in its own process (``git archive``
   of REV in a temporary folder, first on ``sys.path``), alternating over
   ``--rounds`` rounds so that both see the same machine load; the report gives
   each one's figures over all rounds, each round's p95 (the spread), and the
   ratio before / after. ``--query-cache off`` asks the working tree's service to
   keep no question vectors (the default: the questions are cycled, and a cache
   would answer the repeats; ``on`` measures it with the cache).
Goals, so that the search stays a small part of an agent's turn: p95 < 150 ms embedded,
< 250 ms Elasticsearch, encoding included.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# The code measured: the working tree, or (in a ``--measure-db`` process of ``--baseline``)
# another revision's tree.
CODE_ROOT = Path(os.environ.get("BENCH_CODE_ROOT") or ROOT).resolve()
sys.path.insert(0, str(CODE_ROOT))

from chunker.model import Chunk, DocumentMetadata, Neighbours, chunk_id  # noqa: E402
from embeddings.encoder import Encoder  # noqa: E402
from embeddings.minilm import MiniLMEncoder  # noqa: E402
from retrieval.models import SearchRequest  # noqa: E402
from retrieval.service import SearchService  # noqa: E402
from store.elasticsearch import ElasticsearchStore  # noqa: E402
from store.es_search import ElasticsearchSearchIndex  # noqa: E402
from store.model import DocumentState  # noqa: E402
from store.search import fts5_match  # noqa: E402
from store.sqlite import SQLiteStore  # noqa: E402
from store.sqlite_search import SQLiteSearchIndex  # noqa: E402

if TYPE_CHECKING:  # the code of --baseline REV may have no dense views
    from embeddings.views import DenseView

SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpora" / "basecamp-policies.jsonl"
QUESTION_SETS = [SHARED / "eval" / "basecamp-qa.jsonl", ROOT / "eval" / "mozilla-en-qa.jsonl"]
CHUNKS_PER_DOC = 10
WORDS_PER_CHUNK = 100
CITIES = [f"city:c{i:02d}" for i in range(20)]
CALLER = frozenset({"public", "agents"})
AS_OF = date(2026, 12, 1)
T0 = datetime(2026, 11, 1, tzinfo=UTC)
DIM = 384
WRITE_BATCH = 1000
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+|\d+")
_FRONT = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.S)


def corpus_words() -> list[str]:
    words: list[str] = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("content"):
            words += _WORD.findall(_FRONT.sub("", event["content"]))
    return words


def questions() -> list[str]:
    found = []
    for path in QUESTION_SETS:
        if path.exists():
            found += [json.loads(line)["question"] for line in path.read_text().splitlines()
                      if line.strip()]
    return found


def generate(n_chunks: int, words: list[str], seed: int = 17
             ) -> Iterator[tuple[list[Chunk], DocumentState]]:
    """Documents of CHUNKS_PER_DOC chunks, one (chunks, state) at a time."""
    rng = random.Random(seed)
    for d in range(n_chunks // CHUNKS_PER_DOC):
        doc = f"gen/doc-{d:06d}"
        labels = ["finance"] if rng.random() < 0.2 else []
        scope = [rng.choice(CITIES)] if rng.random() < 0.3 else []
        meta = DocumentMetadata(
            title=f"Generated policy {d}", scope=scope, access_labels=labels,
            valid_from=date(2026, 1, 1), language="en", source_path=f"{doc}.md",
            keywords=[f"POL-{d:06d}"],
        )
        ids = [chunk_id(doc, 1, f"s{i}") for i in range(CHUNKS_PER_DOC)]
        chunks = []
        for i in range(CHUNKS_PER_DOC):
            start = rng.randrange(0, len(words) - WORDS_PER_CHUNK)
            text = " ".join(words[start:start + WORDS_PER_CHUNK]) + f" Code POL-{d:06d}-{i}."
            chunks.append(Chunk(
                chunk_id=ids[i], document_id=doc, version=1, section=f"s{i}", ordinal=i,
                heading_path=[meta.title or doc, f"Section {i}"], text=text,
                char_start=0, char_end=len(text), token_count=WORDS_PER_CHUNK,
                neighbours=Neighbours(previous=ids[i - 1] if i else None,
                                      next=ids[i + 1] if i + 1 < CHUNKS_PER_DOC else None),
                metadata=meta, changed_at=T0,
            ))
        yield chunks, DocumentState(doc, 1, T0, T0, tuple(ids))


def fill(store: Any, search: Any, n_chunks: int, words: list[str], model_id: str, *,
         views: Sequence[tuple[str, int]] = ()) -> float:
    """Writes the library; random unit vectors under ``model_id`` (one a chunk) and under
    each (view id, rows a chunk) of ``views`` (windows: several rows a chunk)."""
    started = time.perf_counter()
    rng = np.random.default_rng(17)
    batch: list[Chunk] = []
    states: list[DocumentState] = []

    def flush() -> None:
        store.write_chunks(batch)
        for state in states:
            store.put_state(state)
        for view_id, rows in ((model_id, 1), *views):
            vectors = rng.standard_normal((len(batch), rows, DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=2, keepdims=True)
            search.put_vectors(view_id, {c.chunk_id: v.tolist() if rows > 1 else v[0]
                                         for c, v in zip(batch, vectors, strict=True)})
        batch.clear()
        states.clear()

    for chunks, state in generate(n_chunks, words):
        batch += chunks
        states.append(state)
        if len(batch) >= WRITE_BATCH:
            flush()
    if batch:
        flush()
    store.refresh()
    return time.perf_counter() - started


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000.0


def summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"p50": round(statistics.median(ordered), 1),
            "p95": round(float(np.percentile(ordered, 95)), 1),
            "mean": round(statistics.fmean(ordered), 1)}


def measure(service: SearchService, refusing: SearchService, bare: Callable[[str], object],
            asked: list[SearchRequest], *, warmup: int) -> dict[str, dict[str, float]]:
    times, statuses = measure_raw(service, refusing, bare, asked, warmup=warmup)
    result: dict[str, dict[str, float]] = {name: summary(ms) for name, ms in times.items() if ms}
    result["statuses"] = {k: float(v) for k, v in statuses.items()}
    return result


def measure_raw(service: SearchService, refusing: SearchService, bare: Callable[[str], object],
                asked: list[SearchRequest], *, warmup: int
                ) -> tuple[dict[str, list[float]], dict[str, int]]:
    encoder = service.encoder
    for request in asked[:warmup]:
        service.search(request, CALLER)
        bare(request.question)
    times: dict[str, list[float]] = {"search": [], "refused": [], "encode": [], "bare": []}
    statuses: dict[str, int] = {}
    for request in asked:
        started = time.perf_counter()
        response = service.search(request, CALLER)
        times["search"].append((time.perf_counter() - started) * 1000.0)
        statuses[response.status] = statuses.get(response.status, 0) + 1
        times["refused"].append(timed(functools.partial(refusing.search, request, CALLER)))
        if encoder is not None:
            times["encode"].append(timed(functools.partial(
                encoder.encode, [request.question], kind="query")))
        times["bare"].append(timed(functools.partial(bare, request.question)))
    return times, statuses


def fts_bare(path: Path) -> tuple[Callable[[str], object], Callable[[], None]]:
    """SQLite's floor: FTS5 MATCH of the question's words over the text, BM25, top 5."""
    raw = sqlite3.connect(str(path))

    def bare(question: str) -> object:
        match = fts5_match(question)
        return raw.execute(
            "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? "
            "ORDER BY bm25(chunks_fts) LIMIT 5", (match,)).fetchall()

    return bare, raw.close


def sqlite_case(tmp: Path, n: int, words: list[str], model_id: str,
                views: Sequence[tuple[str, int]] = (),
                ) -> tuple[Any, Callable[[str], object], Callable[[], None], float]:
    store = SQLiteStore(tmp / f"bench-{n}.sqlite3")
    store.ensure_ready()
    search = SQLiteSearchIndex(store)
    load_s = fill(store, search, n, words, model_id, views=views)
    bare, close_bare = fts_bare(store.path)

    def close() -> None:
        close_bare()
        store.close()

    return search, bare, close, load_s


def es_case(url: str, n: int, words: list[str], model_id: str,
            views: Sequence[tuple[str, int]] = (),
            ) -> tuple[Any, Callable[[str], object], Callable[[], None], float]:
    connected = ElasticsearchStore.connect(url, f"bench-lat-{uuid.uuid4().hex[:8]}",
                                           timeout_s=120)
    store = ElasticsearchStore(connected.client, connected.names.prefix, vector_dims=DIM,
                               bulk_max_actions=1000)
    store.ensure_ready()
    search = ElasticsearchSearchIndex(store)
    load_s = fill(store, search, n, words, model_id, views=views)
    started = time.perf_counter()
    store.client.options(request_timeout=1800).indices.forcemerge(
        index=store.names.chunks, max_num_segments=1)
    store.refresh()
    load_s += time.perf_counter() - started

    def bare(question: str) -> object:
        return store.client.search(index=store.names.chunks, size=5, source=False,
                                   query={"match": {"text": question}},
                                   track_total_hits=False)

    def close() -> None:
        store.delete_everything()
        store.close()

    return search, bare, close, load_s


def requests(count: int) -> list[SearchRequest]:
    """The questions, cycled, every other one with a city scope (the same in every process)."""
    rng = random.Random(5)
    pool = questions()
    return [SearchRequest(question=pool[i % len(pool)], as_of=AS_OF,
                          scope=[rng.choice(CITIES)] if i % 2 else [])
            for i in range(count)]


def services(index: Any, encoder: Encoder | None, query_cache: bool,
             views: Sequence[DenseView] | None = None) -> tuple[SearchService, SearchService]:
    """(answering, refusing) services; ``query_cache`` off keeps no question vectors, where
    the code measured has that cache at all (a baseline before it is measured as it is)."""
    options: dict[str, Any] = {"clock": lambda: AS_OF}
    if not query_cache and "query_cache_size" in inspect.signature(SearchService).parameters:
        options["query_cache_size"] = 0
    if views is not None:  # the working tree's dense views (the baseline's code has none)
        options["views"] = views
        encoder = None
    return (SearchService(index, encoder, threshold=-1.0, keyword_threshold=-1.0, **options),
            SearchService(index, encoder, threshold=2.0, keyword_threshold=2.0, **options))


def measure_db(args: argparse.Namespace) -> None:
    """One process of ``--baseline``: search an existing SQLite file, print the raw times."""
    loaded = sys.modules["store.sqlite_search"].__file__ or ""
    if not Path(loaded).resolve().is_relative_to(CODE_ROOT):
        raise SystemExit(f"store.sqlite_search came from {loaded}, not from {CODE_ROOT}")
    encoder = MiniLMEncoder() if args.encoder == "minilm" else None
    store = SQLiteStore(args.measure_db)
    bare, close_bare = fts_bare(args.measure_db)
    try:
        service, refusing = services(SQLiteSearchIndex(store), encoder, args.query_cache == "on")
        times, statuses = measure_raw(service, refusing, bare, requests(args.queries),
                                      warmup=args.warmup)
    finally:
        close_bare()
        store.close()
    print(json.dumps({"times": times, "statuses": statuses}))


def extract_revision(rev: str, into: Path) -> Path:
    """The repository's tree at ``rev`` (``git archive``) in ``into``, a new directory: the
    code a process measures when ``BENCH_CODE_ROOT`` names it."""
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def compare_sqlite(args: argparse.Namespace, tmp: Path, n: int, words: list[str],
                   model_id: str) -> list[dict[str, Any]]:
    """The baseline revision and the working tree over one SQLite file, rounds alternating."""
    baseline = tmp / "baseline"
    if not baseline.exists():
        extract_revision(args.baseline, baseline)
    index, _bare, close, load_s = sqlite_case(tmp, n, words, model_id)
    path = index.store.path
    close()
    codes = [(f"baseline {args.baseline}", baseline, "on"),
             (f"working tree, query cache {args.query_cache}", ROOT, args.query_cache)]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in codes}
    loads: list[float] = [os.getloadavg()[0]]
    for round_no in range(args.rounds):
        for name, root, cache in codes if round_no % 2 == 0 else codes[::-1]:
            command = [sys.executable, str(Path(__file__).resolve()), "--measure-db", str(path),
                       "--queries", str(args.queries), "--warmup", str(args.warmup),
                       "--encoder", args.encoder, "--query-cache", cache]
            done = subprocess.run(command, check=True, capture_output=True, text=True,
                                  env={**os.environ, "BENCH_CODE_ROOT": str(root)})
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
            loads.append(os.getloadavg()[0])
    rows = []
    for name, _, _ in codes:
        merged: dict[str, list[float]] = {}
        for run in runs[name]:
            for what, ms in run["times"].items():
                merged.setdefault(what, []).extend(ms)
        row: dict[str, Any] = {
            "store": "sqlite", "code": name, "chunks": n, "encoder": args.encoder,
            "queries": len(merged["search"]), "rounds": args.rounds, "load_s": round(load_s, 1),
            "loadavg_1m": [round(min(loads), 1), round(max(loads), 1)],
            **{what: summary(ms) for what, ms in merged.items() if ms},
            "search_p95_by_round": [summary(run["times"]["search"])["p95"]
                                    for run in runs[name]],
            "statuses": runs[name][0]["statuses"],
        }
        rows.append(row)
    before = rows[0]
    for row in rows[1:]:
        row["ratio_before_after"] = {
            what: {q: round(before[what][q] / row[what][q], 2) for q in ("p50", "p95")}
            for what in ("search", "refused") if what in row}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--stores", nargs="+", choices=["sqlite", "elasticsearch"],
                        default=["sqlite", "elasticsearch"])
    parser.add_argument("--encoder", choices=["minilm", "none"], default="minilm")
    parser.add_argument("--views", default="minilm+w150s75,bge-small+w150s75:en",
                        help="dense views (default: the service's default, "
                             "minilm+w150s75,bge-small+w150s75:en); 'minilm': the whole-chunk "
                             "MiniLM view alone, as before views")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--es-url", default="http://127.0.0.1:9200")
    parser.add_argument("--json", action="store_true", help="one JSON object at the end")
    parser.add_argument("--baseline", metavar="REV",
                        help="SQLite: also measure the code at this git revision, alternating")
    parser.add_argument("--rounds", type=int, default=3,
                        help="with --baseline: processes per code, alternating")
    parser.add_argument("--query-cache", choices=["on", "off"], default="off",
                        help="the working tree's question-vector cache (off: every question "
                             "is encoded, as the baseline does)")
    parser.add_argument("--measure-db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_db is not None:
        measure_db(args)
        return

    encoder: Encoder | None = None
    model_id = "random-unit@384"
    if args.encoder == "minilm":
        encoder = MiniLMEncoder()
        model_id = encoder.model_id
    from embeddings.registry import encoder_by_name  # noqa: PLC0415
    from embeddings.views import DenseView, parse_view_specs  # noqa: PLC0415

    # The dense views: a windowed view has 2 rows a chunk (the public libraries average 1.67
    # windows a chunk), a whole one 1; random rows, as for the one view (see 2. above).
    views = []
    if encoder is not None:
        built: dict[str, Encoder] = {"minilm": encoder}
        for spec in parse_view_specs(args.views):
            if spec.name not in built:
                built[spec.name] = encoder_by_name(spec.name)
            views.append(DenseView(built[spec.name], spec.shape, weight=spec.weight,
                                   languages=spec.languages))
    stored = [(v.view_id, 2 if v.shape is not None else 1) for v in views
              if v.view_id != model_id]
    words = corpus_words()
    asked = requests(args.queries)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        for n in args.sizes:
            for kind in args.stores:
                if kind == "sqlite" and args.baseline:
                    rows = compare_sqlite(args, Path(tmp), n, words, model_id)
                    results += rows
                    if not args.json:
                        for row in rows:
                            print(render(row), flush=True)
                    continue
                if kind == "sqlite":
                    index, bare, close, load_s = sqlite_case(Path(tmp), n, words, model_id,
                                                             stored)
                else:
                    index, bare, close, load_s = es_case(args.es_url, n, words, model_id,
                                                         stored)
                load_before = os.getloadavg()[0]
                try:
                    service, refusing = services(index, encoder, args.query_cache == "on",
                                                 views if encoder is not None else None)
                    figures = measure(service, refusing, bare, asked, warmup=args.warmup)
                finally:
                    close()
                row = {"store": kind, "chunks": n, "encoder": args.encoder,
                       "queries": len(asked), "load_s": round(load_s, 1),
                       # The machine is shared: a load above the 2 cores slows every figure.
                       "loadavg_1m": [round(load_before, 1), round(os.getloadavg()[0], 1)],
                       **figures}
                results.append(row)
                if not args.json:
                    print(render(row), flush=True)
    if args.json:
        print(json.dumps({"cpus": _cpus(), "results": results}, indent=2))


def render(row: dict[str, Any]) -> str:
    def cell(name: str) -> str:
        f = row.get(name)
        return f"{name} p50 {f['p50']:.1f} p95 {f['p95']:.1f}" if f else f"{name} n/a"

    code = f" [{row['code']}]" if "code" in row else ""
    extra = ""
    if "search_p95_by_round" in row:
        extra += f", search p95 by round {row['search_p95_by_round']}"
    if "ratio_before_after" in row:
        extra += f", before/after {row['ratio_before_after']}"
    return (f"{row['store']}{code} {row['chunks']:>7} chunks (loaded in {row['load_s']:.0f} s): "
            + " | ".join(cell(n) for n in ("search", "refused", "encode", "bare"))
            + f"  ms  statuses {row['statuses']}, load {row['loadavg_1m']}{extra}")


def _cpus() -> int:
    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    main()
