"""Recall of search_policy on every public question set in one run, beside a plain baseline.

    .venv/bin/python bench/bench_retrieval.py [--json FILE] [--compare BEFORE.json]
        [--store sqlite|memory|elasticsearch] [--encoder minilm|hashing|none] [--rrf-k N]
        [--sets NAME,...] [--shared DIR] [--cache-dir DIR | --no-cache]
    .venv/bin/python bench/bench_retrieval.py --compare BEFORE.json --after AFTER.json

Why every set at once: a ranking choice made on one set fits that set (the
choices made on the basecamp set alone scored 85% there and 56% on a library
nobody had tuned on). The keep rule and the report live in
``bench/retrieval_protocol.py``; docs/search.md says how a change is chosen.

The sets (``public_sets``), each over its own library, indexed alone in a fresh store:

- ``basecamp``: ``../shared/eval/basecamp-qa.jsonl`` over
  ``../shared/corpora/basecamp-policies.jsonl``;
- ``mozilla-en``/``-de``/``-fr``: ``eval/mozilla-*-qa.jsonl`` over
  ``../shared/corpora/mozilla-legal-docs.jsonl.gz`` (one index of the whole library for
  the three, as a user would run it);
- ``sample``: ``examples/qa.jsonl`` over the folder ``examples/library`` (its ``agents``
  rows search with ``public, agents``, as the integration test does);
- ``legalmattic``: ``eval/legalmattic-qa.jsonl`` over ``eval/legalmattic.jsonl.gz``.

A set whose files are absent (``../shared`` not checked out) is skipped, and the
report says why. A library is what its source lists now (the change log's last
upsert per document, the folder's files), applied through the project's
``Indexer`` as the reindex would; the vectors come from the project's
``reembed`` through its ``CachedEncoder``, over an on-disk content-addressed
cache (``.cache/bench-vectors/embeddings.sqlite3``, keyed by model id and text),
so a second run encodes only texts it has not seen.

Ours is measured by ``retrieval.eval.evaluate`` (``policy-indexer eval``'s code):
the default ``SearchService`` with its threshold, as a caller sees it (a refused
answerable row is a miss), every request at ``AS_OF`` so that a run next year
reads the same validity dates. The baseline is LangChain's
``MarkdownHeaderTextSplitter`` chunks of the same bodies (front matter removed),
ranked by ``rank_bm25``'s BM25Okapi over lowercased words; it has no permission
filter and no threshold. A hit is the sets' (``../shared/eval/README.md``): the
row's document and its evidence, whitespace collapsed, in one of the first k
ranked passages.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from langchain_text_splitters import MarkdownHeaderTextSplitter
from rank_bm25 import BM25Okapi

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.retrieval_protocol import (  # noqa: E402
    KS,
    Ranking,
    RunReport,
    SetResult,
    keep_rule,
    render,
    render_comparison,
)
from embeddings.backfill import reembed  # noqa: E402
from embeddings.cache import CachedEncoder, EmbeddingCache, InMemoryEmbeddingCache  # noqa: E402
from embeddings.cache_sqlite import SQLiteEmbeddingCache  # noqa: E402
from embeddings.registry import ENCODER_NAMES, encoder_by_name  # noqa: E402
from embeddings.views import DEFAULT_VIEWS, DenseView, parse_view_specs, whole  # noqa: E402
from events.model import Action, ChangeEvent  # noqa: E402
from indexing.core import Indexer  # noqa: E402
from indexing.model import Outcome  # noqa: E402
from retrieval.eval import QaRow, collapse, evaluate, load_rows  # noqa: E402
from retrieval.service import SearchService  # noqa: E402
from sources.base import Source, SourceDocument  # noqa: E402
from sources.changelog import ChangeLogSource  # noqa: E402
from sources.folder import MarkdownFolderSource  # noqa: E402
from store.search_terms import embed_windows  # noqa: E402

SHARED = ROOT.parent / "shared"
CACHE_DIR = ROOT / ".cache" / "bench-vectors"
# Every request asks for the library as valid on this day, whatever day the bench runs.
AS_OF = date(2026, 12, 1)
PUBLIC = {"public": frozenset({"public"})}
_FRONT = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.S)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Library:
    name: str
    path: Path
    kind: str  # "changelog" or "folder"

    def source(self) -> Source:
        if self.kind == "folder":
            return MarkdownFolderSource(self.path)
        return ChangeLogSource(self.path)


@dataclass(frozen=True)
class QuestionSet:
    name: str
    qa: Path
    library: Library
    profiles: dict[str, frozenset[str]]


def public_sets(shared: Path) -> tuple[QuestionSet, ...]:
    """Every public set; ``shared`` is the checkout of ../shared (corpora and eval)."""
    basecamp = Library("basecamp", shared / "corpora" / "basecamp-policies.jsonl", "changelog")
    mozilla = Library("mozilla", shared / "corpora" / "mozilla-legal-docs.jsonl.gz", "changelog")
    sample = Library("sample", ROOT / "examples" / "library", "folder")
    legalmattic = Library("legalmattic", ROOT / "eval" / "legalmattic.jsonl.gz", "changelog")
    return (
        QuestionSet("basecamp", shared / "eval" / "basecamp-qa.jsonl", basecamp, PUBLIC),
        *(QuestionSet(f"mozilla-{lang}", ROOT / "eval" / f"mozilla-{lang}-qa.jsonl", mozilla,
                      PUBLIC) for lang in ("en", "de", "fr")),
        QuestionSet("sample", ROOT / "examples" / "qa.jsonl", sample,
                    {**PUBLIC, "agents": frozenset({"public", "agents"})}),
        QuestionSet("legalmattic", ROOT / "eval" / "legalmattic-qa.jsonl", legalmattic, PUBLIC),
    )


@contextmanager
def fresh_index(kind: str, tmp: Path, url: str, name: str) -> Iterator[tuple[Any, Any]]:
    """(store, search index) of a new, empty index; removed afterwards."""
    if kind == "memory":
        from store.memory import InMemoryStore  # noqa: PLC0415
        from store.memory_search import InMemorySearchIndex  # noqa: PLC0415

        mem = InMemoryStore()
        yield mem, InMemorySearchIndex(mem)
    elif kind == "sqlite":
        from store.sqlite import SQLiteStore  # noqa: PLC0415
        from store.sqlite_search import SQLiteSearchIndex  # noqa: PLC0415

        lite = SQLiteStore(tmp / f"{name}.sqlite3")
        lite.ensure_ready()
        try:
            yield lite, SQLiteSearchIndex(lite)
        finally:
            lite.close()
    else:
        from store.elasticsearch import ElasticsearchStore  # noqa: PLC0415
        from store.es_search import ElasticsearchSearchIndex  # noqa: PLC0415

        es = ElasticsearchStore.connect(url, f"bench-{name}-{time.time_ns() % 10**8}")
        es.ensure_ready()
        try:
            yield es, ElasticsearchSearchIndex(es)
        finally:
            es.delete_everything()
            es.close()


def documents(library: Library) -> list[SourceDocument]:
    """The library as its source lists it now (deleted and unreadable ones left out)."""
    source = library.source()
    try:
        return [source.get_document(entry.document_id)
                for entry in sorted(source.list_documents(), key=lambda e: e.document_id)
                if not entry.deleted and entry.unreadable is None]
    finally:
        source.close()


def index_library(store: Any, docs: Sequence[SourceDocument], source: str) -> int:
    """Apply every document as one upsert through the ``Indexer``; returns the chunks."""
    now = datetime.now(UTC)
    events = [ChangeEvent(event_id=f"bench-{i}", document_id=d.document_id, action=Action.UPSERT,
                          version=d.version, changed_at=d.changed_at, received_at=now,
                          content_type=d.content_type, content=d.content, metadata=d.metadata,
                          source=source)
              for i, d in enumerate(docs)]
    indexer, chunks = Indexer(store), 0
    for start in range(0, len(events), 50):
        applied = indexer.apply(events[start:start + 50])
        bad = [r for r in applied.results if r is not Outcome.INDEXED]
        if bad:
            raise RuntimeError(f"indexing the bench library failed: {bad[0]!r}")
        chunks += applied.chunks_written
    store.refresh()
    return chunks


def baseline(docs: Sequence[SourceDocument], rows: Sequence[QaRow]) -> Ranking:
    """BM25 over LangChain header chunks of the same bodies (module docstring)."""
    splitter = MarkdownHeaderTextSplitter(
        [("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4")])
    chunks: list[tuple[str, str]] = []
    for doc in docs:
        body = _FRONT.sub("", doc.content, count=1)
        chunks += [(doc.document_id, part.page_content) for part in splitter.split_text(body)]
    bm25 = BM25Okapi([_WORD.findall(text.lower()) for _, text in chunks])
    ranks: dict[str, int | None] = {}
    for row in rows:
        if row.document_id is None or row.evidence is None:
            continue
        scores = bm25.get_scores(_WORD.findall(row.question.lower()))
        order = sorted(range(len(chunks)), key=lambda i: -scores[i])[:max(KS)]
        evidence = collapse(row.evidence)
        ranks[row.id] = next((n for n, i in enumerate(order, start=1)
                              if chunks[i][0] == row.document_id
                              and evidence in collapse(chunks[i][1])), None)
    return ranking(ranks)


def ranking(ranks: dict[str, int | None]) -> Ranking:
    hits = {k: sum(1 for r in ranks.values() if r is not None and r <= k) for k in KS}
    mrr = sum(1 / r for r in ranks.values() if r is not None) / len(ranks) if ranks else 0.0
    return Ranking(hits, round(mrr, 3), ranks)


def make_views(spec: str, encoders: dict[str, CachedEncoder]) -> list[DenseView]:
    """The dense views of ``--views`` (``embeddings.views.ViewSpec`` syntax), each over the
    cached encoder of its model (one per model, shared by its views)."""
    views = []
    for view in parse_view_specs(spec):
        encoder = encoders[view.name]
        windows = whole if view.shape is None else functools.partial(
            embed_windows, words=view.shape.words, stride=view.shape.stride)
        views.append(DenseView(encoder, view.shape, windows, view.weight, view.languages))
    return views


def run_library(library: Library, sets: Sequence[QuestionSet], args: argparse.Namespace,
                views: Sequence[DenseView], tmp: Path) -> tuple[list[SetResult], dict[str, Any]]:
    started = first = time.perf_counter()
    docs = documents(library)
    timing: dict[str, Any] = {}
    results = []
    with fresh_index(args.store, tmp, args.elasticsearch, library.name) as (store, search):
        chunks = index_library(store, docs, library.kind)
        timing["index_s"] = round(time.perf_counter() - started, 1)
        for view in views:
            encoder = view.encoder
            assert isinstance(encoder, CachedEncoder)
            encoded, hits = encoder.texts_encoded, encoder.cache_hits
            started = time.perf_counter()
            reembed(search, encoder, progress=False, batch_size=64, view_id=view.view_id,
                    windows=view.windows)
            timing[f"backfill_s[{view.view_id}]"] = round(time.perf_counter() - started, 1)
            timing[f"texts_encoded[{view.view_id}]"] = encoder.texts_encoded - encoded
            timing[f"vectors_from_cache[{view.view_id}]"] = encoder.cache_hits - hits
        options: dict[str, Any] = {} if args.rrf_k is None else {"rrf_k": args.rrf_k}
        service = SearchService(search, None, views=views, **options)
        unthresholded = SearchService(search, None, views=views, threshold=-1e9,
                                      keyword_threshold=-1e9, **options)
        try:
            for qs in sets:
                rows = load_rows(qs.qa)
                report = evaluate(service, rows, qs.profiles, KS, unthresholded=unthresholded,
                                  as_of=AS_OF)
                ours = ranking({r.id: r.rank for r in report.rows if r.kind != "no-document"})
                results.append(SetResult(
                    qs.name, library.name, len(docs), chunks, report.overall.answerable,
                    report.unanswerable, ours, baseline(docs, rows),
                    report.unanswerable_refused, report.answerable_refused,
                    report.unnecessary_refusals, len(report.leaks),
                    round(report.latency_p50_ms, 1), round(report.latency_p95_ms, 1)))
        finally:
            service.close()
            unthresholded.close()
    timing["total_s"] = round(time.perf_counter() - first, 1)
    return results, timing


def missing_files(qs: QuestionSet, shared: Path) -> str | None:
    for path in (qs.library.path, qs.qa):
        if not path.exists():
            return f"{path} not found" + (" (it comes with ../shared, see --shared)"
                                          if shared in path.parents else "")
    return None


def chosen_sets(args: argparse.Namespace) -> list[QuestionSet]:
    if args.qa:
        corpus = Path(args.corpus)
        library = Library(corpus.name, corpus, "folder" if corpus.is_dir() else "changelog")
        return [QuestionSet(Path(qa).stem, Path(qa), library, PUBLIC) for qa in args.qa]
    every = public_sets(Path(args.shared))
    if not args.sets:
        return list(every)
    names = [n.strip() for n in args.sets.split(",") if n.strip()]
    unknown = sorted(set(names) - {qs.name for qs in every})
    if unknown:
        raise SystemExit(f"--sets: unknown {unknown}; known: {[qs.name for qs in every]}")
    return [qs for qs in every if qs.name in names]


def commit() -> str:
    """HEAD, and '+changes' when the ranking code differs from it in the working tree."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=False)
        return done.stdout.strip()

    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "retrieval", "store", "embeddings", "analysis",
                "chunker")
    return head + ("+changes" if dirty else "")


def run(args: argparse.Namespace) -> RunReport:
    spec = args.views if args.views is not None else (
        "" if args.encoder == "none" else DEFAULT_VIEWS if args.encoder == "minilm"
        else args.encoder)
    names = list(dict.fromkeys(v.name for v in parse_view_specs(spec)))
    cache: EmbeddingCache | None = None
    closers: list[Callable[[], None]] = []
    if names:
        if args.no_cache:
            cache = InMemoryEmbeddingCache()
        else:
            cache_dir = Path(args.cache_dir)
            cache_dir.mkdir(parents=True, exist_ok=True)
            (cache_dir / ".gitignore").write_text("*\n", encoding="utf-8")
            lite = SQLiteEmbeddingCache.in_dir(cache_dir)
            closers.append(lite.close)
            cache = lite
    encoders = {}
    for name in names:
        assert cache is not None
        encoders[name] = CachedEncoder(encoder_by_name(name), cache)
    views = make_views(spec, encoders)
    report = RunReport(
        date=date.today().isoformat(),
        command=shlex.join(["bench/bench_retrieval.py", *sys.argv[1:]]),
        settings={"store": args.store, "encoder": args.encoder,
                  "encoder_model": views[0].model_id if views else None,
                  "views": [v.view_id for v in views], "view_specs": spec,
                  "rrf_k": args.rrf_k, "as_of": AS_OF.isoformat()},
        commit=commit())
    started = time.perf_counter()
    by_library: dict[Library, list[QuestionSet]] = {}
    for qs in chosen_sets(args):
        why = missing_files(qs, Path(args.shared))
        if why is not None:
            report.skipped[qs.name] = why
        else:
            by_library.setdefault(qs.library, []).append(qs)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for library, sets in by_library.items():
                results, timing = run_library(library, sets, args, views, Path(tmp))
                report.sets.update({r.name: r for r in results})
                report.timing[library.name] = timing
                print(f"{library.name}: {results[0].documents} documents, "
                      f"{results[0].chunks} chunks, {json.dumps(timing)}", file=sys.stderr)
    finally:
        for close in closers:
            close()
    report.timing["wall_s"] = round(time.perf_counter() - started, 1)
    return report


def read_report(path: str) -> RunReport:
    try:
        return RunReport.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"{path}: not a report of this bench: {exc}") from exc


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "memory", "elasticsearch"),
                        default="sqlite")
    parser.add_argument("--encoder", choices=(*ENCODER_NAMES, "none"), default="minilm")
    parser.add_argument("--views", default=None,
                        help="dense views, NAME[+wWORDS[sSTRIDE]][*WEIGHT],... (overrides "
                             f"--encoder; default: {DEFAULT_VIEWS}), e.g. minilm,bge-small+w150")
    parser.add_argument("--elasticsearch", default="http://127.0.0.1:9200")
    parser.add_argument("--rrf-k", type=int, default=None,
                        help="the fusion constant (default: the service's)")
    parser.add_argument("--shared", default=str(SHARED),
                        help="the ../shared checkout (corpora/, eval/)")
    parser.add_argument("--sets", help="comma-separated subset of the sets (a quick look; the "
                                       "keep rule needs them all)")
    parser.add_argument("--corpus", help="with --qa: an ad-hoc library (change log or folder)")
    parser.add_argument("--qa", nargs="+", help="with --corpus: ad-hoc question sets over it")
    parser.add_argument("--cache-dir", default=str(CACHE_DIR),
                        help="where passage vectors are kept between runs")
    parser.add_argument("--no-cache", action="store_true", help="encode every passage again")
    parser.add_argument("--json", metavar="FILE", help="write the report as JSON to FILE")
    parser.add_argument("--compare", metavar="BEFORE.json",
                        help="compare with a saved run and apply the keep rule (exit 1: REJECT)")
    parser.add_argument("--after", metavar="AFTER.json",
                        help="with --compare: compare two saved runs, run nothing")
    args = parser.parse_args(argv)
    if bool(args.qa) != bool(args.corpus):
        parser.error("--corpus and --qa go together")
    if args.after and not args.compare:
        parser.error("--after needs --compare")
    if args.after:
        after = read_report(args.after)
    else:
        after = run(args)
        print(render(after))
        print(f"wall time {after.timing['wall_s']} s", file=sys.stderr)
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(after.to_dict(), indent=2) + "\n",
                                       encoding="utf-8")
    if args.compare:
        before = read_report(args.compare)
        print(render_comparison(before, after))
        return 0 if keep_rule(before, after).keep else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
