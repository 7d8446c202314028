"""Cost of one freshness-monitor cycle (source listing + index scan), and its peak memory.

    .venv/bin/python bench/bench_monitor.py                 # 1,000 and 100,000 documents
    .venv/bin/python bench/bench_monitor.py --sizes 1000 --chunks-per-doc 5
    .venv/bin/python bench/bench_monitor.py --sizes 1000000 --incremental 100 \
        --elasticsearch http://127.0.0.1:9200      # full against incremental cycles

For each size it writes a change log of N documents (the source, read by the real
``ChangeLogSource``) and builds an index that streams N document states and
N x chunks-per-doc chunk references the way a store's scroll does (an in-process
implementation of the Store protocol, so the figure is the monitor's own cost,
not Elasticsearch's). The mix: 5% of documents behind, 1% missing from the
index, 1% deleted at the source, 1% only in the index, 1% with a leftover chunk.

Baseline, in the same run: the bare cost of reading the same listing, states and
chunks (iterate and count, no join, no lag). The ratio monitor/baseline is what
the monitor's arithmetic adds. Peak memory is measured by tracemalloc in a second
pass (tracemalloc slows Python, so times come from the first pass).
Goal, so that one check of a large library fits well inside the monitor's interval on a
small machine: 100,000 documents under 10 s and 300 MB.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import resource
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from elasticsearch import helpers

from metrics.freshness import FreshnessSnapshot, LagMemory, measure
from metrics.monitor import FULL_EVERY, FreshnessMonitor
from sources.changelog import ChangeLogSource
from store.elasticsearch import ElasticsearchStore
from store.model import ChunkRef, DocumentState

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def kind(i: int) -> str:
    bucket = i % 100
    return {0: "missing", 1: "deleted", 2: "index_only", 3: "leftover"}.get(
        bucket, "behind" if bucket < 9 else "current"
    )


def write_source(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            k = kind(i)
            if k == "index_only":
                continue
            version = 3 if k in ("behind", "deleted") else 2
            record = {
                "seq": i, "document_id": f"policies/doc-{i:06d}", "path": f"doc-{i}.md",
                "action": "delete" if k == "deleted" else "upsert", "version": version,
                "changed_at": (NOW - timedelta(minutes=i % 500)).isoformat(), "commit": "b",
            }
            if k != "deleted":
                record["content"] = "# Policy\n\nShort body."
            f.write(json.dumps(record) + "\n")


class GeneratedIndex:
    """Streams states and chunk refs like a store's scroll; implements what the monitor uses."""

    def __init__(self, n: int, chunks_per_doc: int) -> None:
        self.n, self.chunks_per_doc = n, chunks_per_doc

    def refresh(self) -> None:
        return None

    def iter_states(self) -> Iterator[DocumentState]:
        indexed_at = NOW - timedelta(hours=1)
        for i in range(self.n):
            if kind(i) == "missing":
                continue
            doc = f"policies/doc-{i:06d}"
            ids = tuple(f"{doc}@v2#s{c}" for c in range(self.chunks_per_doc))
            yield DocumentState(doc, 2, NOW - timedelta(days=1), indexed_at, chunk_ids=ids)

    def chunk_total(self) -> int:
        return sum(self.chunks_per_doc + (kind(i) == "leftover")
                   for i in range(self.n) if kind(i) != "missing")

    def iter_chunks(self) -> Iterator[ChunkRef]:
        indexed_at = NOW - timedelta(hours=1)
        for i in range(self.n):
            k = kind(i)
            if k == "missing":
                continue
            doc = f"policies/doc-{i:06d}"
            for c in range(self.chunks_per_doc):
                yield ChunkRef(f"{doc}@v2#s{c}", doc, 2, indexed_at)
            if k == "leftover":
                yield ChunkRef(f"{doc}@v1#s0", doc, 1, indexed_at)


def load_elasticsearch(url: str, index: GeneratedIndex) -> ElasticsearchStore:
    """The same states and chunks written to a real Elasticsearch (unique prefix)."""
    store = ElasticsearchStore.connect(url, f"bench{uuid.uuid4().hex[:8]}")
    store.ensure_ready()
    states = ({"_index": store.names.states, "_id": s.document_id, "_source": {
        "document_id": s.document_id, "version": s.version, "deleted": s.deleted,
        "changed_at": s.changed_at.isoformat(), "indexed_at": s.indexed_at.isoformat(),
        "chunk_ids": list(s.chunk_ids)}} for s in index.iter_states())
    chunks = ({"_index": store.names.chunks, "_id": c.chunk_id, "_source": {
        "chunk_id": c.chunk_id, "document_id": c.document_id, "version": c.version,
        "indexed_at": c.indexed_at.isoformat() if c.indexed_at else None,
        "text": "short"}} for c in index.iter_chunks())
    for actions in (states, chunks):
        helpers.bulk(store.client.options(request_timeout=120), actions, chunk_size=2000)
    store.refresh()
    return store


Index = GeneratedIndex | ElasticsearchStore


def incremental_run(url: str, path: Path, n: int, chunks_per_doc: int, changes: int) -> None:
    """On Elasticsearch: a full cycle, ``changes`` changes, an incremental cycle, a full one.

    The monitor is ``FreshnessMonitor`` as the processes run it (its clock the real
    one); the changes are new versions of ``changes`` documents: the line appended to
    the change log, the new state and chunks written, the old chunks deleted (what the
    worker does), all stamped now.
    """
    generated = GeneratedIndex(n, chunks_per_doc)
    started = time.perf_counter()
    store = load_elasticsearch(url, generated)
    print(f"loading {n:,} states and {generated.chunk_total():,} chunks took "
          f"{time.perf_counter() - started:.1f} s")
    try:
        source = ChangeLogSource(path)
        incremental = FreshnessMonitor(source, store, max_series=100, full_every=FULL_EVERY)
        rows = []
        for label in ("first (full)", "incremental, nothing changed"):
            rows.append((label, cycle(incremental)))
        changed = change(store, path, n, changes, chunks_per_doc)
        rows.append((f"incremental after {changed} changes", cycle(incremental)))
        full = FreshnessMonitor(ChangeLogSource(path), store, max_series=100,
                                full_every=timedelta(0))
        rows.append(("full, same data", cycle(full)))
        first = rows[0][1][0]
        print(f"{'cycle':>36} {'seconds':>8} {'ratio to full':>14} {'behind':>7} "
              f"{'leftovers':>10} {'chunks':>10}")
        for label, (seconds, snap) in rows:
            print(f"{label:>36} {seconds:>8.2f} {seconds / first:>14.3f} {snap.behind:>7} "
                  f"{snap.leftover_versions:>10} {snap.chunks_examined:>10,}")
        a, b = rows[2][1][1], rows[3][1][1]
        same = replace(a, taken_at=b.taken_at, behind_since=[]) == replace(
            b, behind_since=[]) and len(a.behind_since) == len(b.behind_since)
        print(f"incremental and full give the same figures: {same}")
    finally:
        store.delete_everything()
        store.close()


def cycle(monitor: FreshnessMonitor) -> tuple[float, FreshnessSnapshot]:
    gc.collect()
    started = time.perf_counter()
    snapshot = monitor.run_cycle()
    seconds = time.perf_counter() - started
    assert snapshot is not None, monitor.status.last_error
    return seconds, snapshot


def change(store: ElasticsearchStore, path: Path, n: int, changes: int,
           chunks_per_doc: int) -> int:
    """New versions of ``changes`` current documents, as the source and the worker make
    them; returns how many."""
    now = datetime.now(UTC)
    step = max(1, n // changes)
    docs = [i + 50 for i in range(0, n - 50, step) if kind(i + 50) == "current"][:changes]
    with path.open("a", encoding="utf-8") as f:
        for i in docs:
            f.write(json.dumps({
                "seq": n + i, "document_id": f"policies/doc-{i:06d}", "path": f"doc-{i}.md",
                "action": "upsert", "version": 3, "changed_at": now.isoformat(), "commit": "c",
                "content": "# Policy\n\nNew body."}) + "\n")
    chunks = [{"_index": store.names.chunks, "_id": f"policies/doc-{i:06d}@v3#s{c}",
               "_source": {"chunk_id": f"policies/doc-{i:06d}@v3#s{c}",
                           "document_id": f"policies/doc-{i:06d}", "version": 3,
                           "indexed_at": now.isoformat(), "text": "short"}}
              for i in docs for c in range(chunks_per_doc)]
    helpers.bulk(store.client, chunks)
    store.put_states([DocumentState(f"policies/doc-{i:06d}", 3, now, now) for i in docs])
    store.delete_chunks(f"policies/doc-{i:06d}@v2#s{c}" for i in docs
                        for c in range(chunks_per_doc))
    store.refresh()
    return len(docs)


def monitor_cycle(source: ChangeLogSource, index: Index) -> FreshnessSnapshot:
    source.close()  # drop the source's cache: every cycle reads the file
    index.refresh()
    return measure(source.list_documents(), index.iter_states(), index.iter_chunks(),
                   now=NOW, memory=LagMemory(), max_series=100, grace=timedelta(minutes=10))


def baseline(source: ChangeLogSource, index: Index) -> object:
    source.close()
    count = sum(1 for _ in source.list_documents())
    count += sum(1 for _ in index.iter_states())
    return count + sum(1 for _ in index.iter_chunks())


def timed(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def peak_mb(fn: Callable[[], object]) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--chunks-per-doc", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--elasticsearch", metavar="URL",
                        help="also scan a real Elasticsearch loaded with the same index")
    parser.add_argument("--es-page-sizes", type=int, nargs="+", default=[1000, 10000],
                        help="hits per scan request to compare on Elasticsearch")
    parser.add_argument("--incremental", type=int, metavar="CHANGES",
                        help="with --elasticsearch: time a full cycle, an incremental one "
                        "after CHANGES changes and a full one again, instead of the rest")
    args = parser.parse_args()
    if args.incremental is not None:
        if not args.elasticsearch:
            parser.error("--incremental needs --elasticsearch")
        with tempfile.TemporaryDirectory() as tmp:
            for n in args.sizes:
                path = Path(tmp) / f"source-{n}.jsonl"
                write_source(path, n)
                incremental_run(args.elasticsearch, path, n, args.chunks_per_doc,
                                args.incremental)
        return
    print(f"{'documents':>14} {'chunks':>9} {'monitor s':>10} {'baseline s':>11} {'ratio':>6} "
          f"{'monitor MB':>11} {'baseline MB':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"source-{n}.jsonl"
            write_source(path, n)
            source, generated = ChangeLogSource(path), GeneratedIndex(n, args.chunks_per_doc)
            report(f"{n:,} streamed", source, generated, args.repeat if n <= 10_000 else 1)
            if args.elasticsearch:
                loaded = time.perf_counter()
                store = load_elasticsearch(args.elasticsearch, generated)
                loaded = time.perf_counter() - loaded
                try:
                    for page in args.es_page_sizes:
                        store.scan_page_size = page
                        report(f"{n:,} es/{page}", source, store, 1)
                finally:
                    store.delete_everything()
                    store.close()
                print(f"{'':>14} (loading Elasticsearch took {loaded:.1f} s, not counted)")
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"max RSS of the whole run (includes tracemalloc's own overhead): {max_rss:.0f} MB")


def report(label: str, source: ChangeLogSource, index: Index, repeat: int) -> None:
    snapshot = monitor_cycle(source, index)
    run_monitor = functools.partial(monitor_cycle, source, index)
    run_baseline = functools.partial(baseline, source, index)
    t_monitor, t_base = timed(run_monitor, repeat), timed(run_baseline, repeat)
    m_monitor, m_base = peak_mb(run_monitor), peak_mb(run_baseline)
    print(f"{label:>14} {snapshot.chunks_examined:>9,} {t_monitor:>10.3f} {t_base:>11.3f} "
          f"{t_monitor / t_base:>6.2f} {m_monitor:>11.1f} {m_base:>12.1f}")
    print(f"{'':>14} behind={snapshot.behind} leftovers={snapshot.leftover_versions}")

if __name__ == "__main__":
    main()
