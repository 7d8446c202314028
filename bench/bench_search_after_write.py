"""The searches right after a write, SQLite at 100k: what a user waits while the keyword
leg's in-memory postings are read again, the code at REV beside the working tree.

    .venv/bin/python bench/bench_search_after_write.py --baseline HEAD
    .venv/bin/python bench/bench_search_after_write.py --baseline HEAD --sizes 10000 --trials 4
    .venv/bin/python bench/bench_search_after_write.py --baseline REV1 REV2 --db FILE

1. The index: ``bench_search_latency``'s generated library (same documents, same
   vectors, same questions and caller), written once to one SQLite file.
   (``--db FILE``: an existing file of that bench instead, e.g. kept from a run.)
2. Each code (``--baseline REV...``: ``git archive`` of each REV, first on ``sys.path``;
   then the working tree) runs in its own process over that file, alternating
   over ``--rounds`` so both see the same machine load. A process warms up with
   ``--warmup`` searches, then runs ``--trials`` trials. A trial: one write of a
   new one-chunk document through a second ``SQLiteStore`` of the same process
   (another connection, as the embedded run's worker has), then searches back to
   back for ``--window`` seconds (the data does not move again), then
   ``--steady`` more searches: the steady state.
3. Per code: each of the first three searches after the write (p50 / max over the
   trials), the slowest search of each trial's window (what the unluckiest user
   after a write waited), every window search (p50 / p95 / max), the steady
   state, and for the working tree how long after the write its copy was current.
   ``SearchService.search`` as the latency bench measures it: the real MiniLM
   encoder (``--encoder none``: keyword only), threshold off, query cache off.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The latency bench puts the code measured (BENCH_CODE_ROOT) first on sys.path.
import bench_search_latency as lat

from embeddings.minilm import MiniLMEncoder
from store.model import DocumentState
from store.sqlite import SQLiteStore
from store.sqlite_search import SQLiteSearchIndex


def copy_is_current(index: Any) -> bool | None:
    """The working tree's copy matches the data (None: code without this copy's fields)."""
    if not hasattr(index, "_reader"):
        return None
    copy = index._copy
    return copy is not None and copy[0] == index._data_key()


def one_write(writer: SQLiteStore, trial: int) -> None:
    doc = f"bench/after-write-{uuid.uuid4().hex[:8]}-{trial}"
    chunk = lat.Chunk(
        chunk_id=lat.chunk_id(doc, 1, "s0"), document_id=doc, version=1, section="s0",
        ordinal=0, heading_path=["After write", "Section 0"],
        text="Refund of a late parcel fee after a write.", char_start=0, char_end=42,
        token_count=9, neighbours=lat.Neighbours(previous=None, next=None),
        metadata=lat.DocumentMetadata(title="After write", language="en",
                                      valid_from=lat.date(2026, 1, 1),
                                      source_path=f"{doc}.md"),
        changed_at=lat.T0,
    )
    writer.write_chunks([chunk])
    writer.put_state(DocumentState(doc, 1, lat.T0, lat.T0, (chunk.chunk_id,)))


def measure_db(args: argparse.Namespace) -> None:
    """One process: trials over an existing file; prints the raw times as JSON."""
    loaded = sys.modules["store.sqlite_search"].__file__ or ""
    if not Path(loaded).resolve().is_relative_to(lat.CODE_ROOT):
        raise SystemExit(f"store.sqlite_search came from {loaded}, not from {lat.CODE_ROOT}")
    encoder = MiniLMEncoder() if args.encoder == "minilm" else None
    store, writer = SQLiteStore(args.measure_db), SQLiteStore(args.measure_db)
    index = SQLiteSearchIndex(store)
    service, _refusing = lat.services(index, encoder, query_cache=False)
    asked = lat.requests(200)
    served = 0

    def search() -> float:
        nonlocal served
        request = asked[served % len(asked)]
        served += 1
        started = time.perf_counter()
        service.search(request, lat.CALLER)
        return (time.perf_counter() - started) * 1000.0

    trials: list[dict[str, Any]] = []
    try:
        for _ in range(args.warmup):
            search()
        for trial in range(args.trials):
            one_write(writer, trial)
            written = time.perf_counter()
            window: list[tuple[float, float]] = []  # (ms since the write, latency ms)
            current_after: float | None = None
            while time.perf_counter() - written < args.window:
                at = (time.perf_counter() - written) * 1000.0
                window.append((round(at, 1), round(search(), 1)))
                if current_after is None and copy_is_current(index):
                    current_after = round((time.perf_counter() - written) * 1000.0, 1)
            steady = [round(search(), 1) for _ in range(args.steady)]
            trials.append({"window": window, "steady": steady, "current_after_ms": current_after,
                           "steady_copy_current": copy_is_current(index)})
    finally:
        service.close()
        close = getattr(index, "close", None)
        if close is not None:
            close()
        writer.close()
        store.close()
    print(json.dumps({"trials": trials}))


def stats(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"p50": round(statistics.median(ordered), 1),
            "p95": round(float(lat.np.percentile(ordered, 95)), 1),
            "max": round(ordered[-1], 1), "n": len(ordered)}


def row(name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    trials = [t for run in runs for t in run["trials"]]
    first = {f"search {i + 1} after the write": stats([t["window"][i][1] for t in trials
                                                       if len(t["window"]) > i])
             for i in range(3)}
    current = [t["current_after_ms"] for t in trials if t["current_after_ms"] is not None]
    return {
        "code": name, "trials": len(trials),
        **first,
        "slowest of each window": stats([max(ms for _, ms in t["window"]) for t in trials]),
        "every window search": stats([ms for t in trials for _, ms in t["window"]]),
        "steady": stats([ms for t in trials for ms in t["steady"]]),
        "copy current after ms": stats(current) if current else None,
        "steady with the copy current": [t["steady_copy_current"] for t in trials],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", metavar="REV", nargs="+", default=["HEAD"],
                        help="the code before (one or more revisions), measured beside "
                             "the working tree")
    parser.add_argument("--db", type=Path,
                        help="an existing file of the latency bench's library (one size)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--encoder", choices=["minilm", "none"], default="minilm")
    parser.add_argument("--rounds", type=int, default=2, help="processes per code, alternating")
    parser.add_argument("--trials", type=int, default=6, help="writes per process")
    parser.add_argument("--window", type=float, default=6.0,
                        help="seconds of back-to-back searches after each write")
    parser.add_argument("--steady", type=int, default=20, help="searches after the window")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--raw", type=Path,
                        help="also write every process's raw trials (JSON) to this file")
    parser.add_argument("--measure-db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_db is not None:
        measure_db(args)
        return

    model_id = MiniLMEncoder().model_id if args.encoder == "minilm" else "random-unit@384"
    words = lat.corpus_words()
    with tempfile.TemporaryDirectory(prefix="bench-after-write-") as tmp:
        codes: list[tuple[str, Path]] = []
        for number, rev in enumerate(args.baseline):
            baseline = lat.extract_revision(rev, Path(tmp) / f"baseline-{number}")
            codes.append((f"baseline {rev}", baseline))
        codes.append(("working tree", lat.ROOT))
        for n in [0] if args.db else args.sizes:
            if args.db:
                path, load_s = args.db, 0.0
            else:
                index, _bare, close, load_s = lat.sqlite_case(Path(tmp), n, words, model_id)
                path = index.store.path
                close()
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in codes}
            loads = [os.getloadavg()[0]]
            for round_no in range(args.rounds):
                for name, root in codes if round_no % 2 == 0 else codes[::-1]:
                    command = [sys.executable, str(Path(__file__).resolve()),
                               "--measure-db", str(path), "--encoder", args.encoder,
                               "--trials", str(args.trials), "--window", str(args.window),
                               "--steady", str(args.steady), "--warmup", str(args.warmup)]
                    done = subprocess.run(command, check=True, capture_output=True, text=True,
                                          env={**os.environ, "BENCH_CODE_ROOT": str(root)})
                    runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
                    loads.append(os.getloadavg()[0])
            if args.raw is not None:
                args.raw.write_text(json.dumps(runs))
            print(json.dumps({
                "chunks": n or str(path), "load_s": round(load_s, 1), "encoder": args.encoder,
                "rounds": args.rounds, "window_s": args.window,
                "loadavg_1m": [round(min(loads), 1), round(max(loads), 1)],
                "codes": [row(name, runs[name]) for name, _ in codes],
            }, indent=2), flush=True)


if __name__ == "__main__":
    main()
