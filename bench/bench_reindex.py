"""Reconcile of a large library against the real Elasticsearch: wall time and peak memory.

For each library size (default 10,000 and 100,000 documents, two chunks each) the
script loads the index in bulk (states + chunks, as the worker would have left
them), writes a change-log source, then measures, each in a fresh process so
that its peak RSS is its own:

- ``read-all``  baseline: list the source, page through every state and every chunk
                reference (what a reconcile that scans the whole index must read);
- ``nothing``   reconcile, nothing changed (must decide ``up_to_date`` for all);
- ``changed``   reconcile with 1% of the documents at a new version (reindexed
                through indexing.Indexer: chunker, bulk write, state, delete step);
- ``per-doc``   baseline: one state get + one chunk-count query per document, the
                design reconcile avoids; timed on 2,000 documents and scaled up.

    .venv/bin/python bench/bench_reindex.py [--sizes 10000,100000] [--changed 0.01]
        [--elasticsearch http://127.0.0.1:9200]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from elasticsearch import Elasticsearch, helpers

from chunker.model import Chunk, DocumentMetadata, chunk_id
from reindex.reconcile import Reconciler
from sources.changelog import ChangeLogSource
from store.elasticsearch import ElasticsearchStore
from store.model import DocumentState

T = datetime(2026, 1, 1, tzinfo=UTC)
SECTIONS = ("intro", "refunds")
SAMPLE_PER_DOC = 2000


def doc_id(n: int) -> str:
    return f"policy/{n:06d}"


def content(n: int, version: int) -> str:
    return (f"# Policy {n}\n\nVersion {version} of policy {n}.\n\n"
            f"## Refunds\n\nWithin {version} days.\n")


def load_index(url: str, prefix: str, size: int) -> None:
    store = ElasticsearchStore.connect(url, prefix, timeout_s=120)
    store.ensure_ready()
    client = store.client

    def actions() -> Any:
        for n in range(size):
            doc = doc_id(n)
            ids = []
            for ordinal, section in enumerate(SECTIONS):
                cid = chunk_id(doc, 1, section)
                ids.append(cid)
                chunk = Chunk(
                    chunk_id=cid, document_id=doc, version=1, section=section, ordinal=ordinal,
                    heading_path=[f"Policy {n}", section], text=f"{section} of {n}",
                    char_start=0, char_end=10,
                    token_count=4, metadata=DocumentMetadata(), changed_at=T,
                )
                source = chunk.model_dump(mode="json")
                source["indexed_at"] = T.isoformat()
                yield {"_index": store.names.chunks, "_id": cid, "_source": source}
            state = DocumentState(doc, 1, T, T, chunk_ids=tuple(ids), content_hash="x")
            yield {"_index": store.names.states, "_id": doc, "_version": 1,
                   "_version_type": "external_gte", "_source": {
                       "document_id": doc, "version": 1, "changed_at": T.isoformat(),
                       "indexed_at": T.isoformat(), "chunk_ids": list(state.chunk_ids),
                       "superseded_chunk_ids": [], "content_hash": "x", "deleted": False,
                       "tombstone_version": None}}

    for ok, item in helpers.streaming_bulk(client, actions(), chunk_size=5000,
                                           raise_on_error=True):
        if not ok:
            raise RuntimeError(f"bulk load failed: {item}")
    store.refresh()
    store.close()


def write_source(path: Path, size: int, changed: int) -> None:
    with path.open("w") as out:
        seq = 0
        for n in range(size):
            seq += 1
            out.write(json.dumps({"seq": seq, "document_id": doc_id(n), "action": "upsert",
                                  "version": 1, "changed_at": T.isoformat(),
                                  "content": content(n, 1)}) + "\n")
        step = max(1, size // changed) if changed else 0
        for n in range(0, size, step) if changed else ():
            seq += 1
            out.write(json.dumps({"seq": seq, "document_id": doc_id(n), "action": "upsert",
                                  "version": 2, "changed_at": T.isoformat(),
                                  "content": content(n, 2)}) + "\n")


# -- phases, each run in its own process ----------------------------------------------
def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def phase(name: str, url: str, prefix: str, source_path: str) -> dict[str, Any]:
    store = ElasticsearchStore.connect(url, prefix, timeout_s=120)
    source = ChangeLogSource(source_path)
    store.client.indices.exists(index=store.names.chunks)  # connected
    rss_before = _status_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM: the peak is this phase's
    started = time.perf_counter()
    result: dict[str, Any] = {}
    if name == "read-all":
        result["listed"] = sum(1 for _ in source.list_documents())
        result["states"] = sum(1 for _ in store.iter_states())
        result["chunks"] = sum(1 for _ in store.iter_chunks())
    elif name in ("nothing", "changed"):
        report = Reconciler(source, store).run()
        result["outcome"] = report.outcome.value
        result["decided"] = dict(report.decided)
        result["applied"] = dict(report.applied)
        result["seconds"] = report.seconds
    elif name == "per-doc":
        ids = [e.document_id for e in source.list_documents()][:SAMPLE_PER_DOC]
        for doc in ids:
            store.get_state(doc)
            store.client.count(index=store.names.chunks, query={"term": {"document_id": doc}})
        result["sampled"] = len(ids)
    result["wall_s"] = time.perf_counter() - started
    result["peak_rss_mb"] = _status_kb("VmHWM") / 1024
    result["growth_mb"] = (_status_kb("VmHWM") - rss_before) / 1024
    store.close()
    return result


def run_phase(name: str, url: str, prefix: str, source: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--phase", name, "--elasticsearch", url, "--prefix", prefix,
         "--source", str(source)],
        capture_output=True, text=True, check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"phase {name} failed:\n{out.stderr[-3000:]}")
    parsed: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return parsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--changed", type=float, default=0.01)
    parser.add_argument("--elasticsearch", default="http://127.0.0.1:9200")
    parser.add_argument("--phase")
    parser.add_argument("--prefix")
    parser.add_argument("--source")
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.elasticsearch, args.prefix, args.source)))
        return
    url = args.elasticsearch
    print(f"{'documents':>10} {'phase':>9} {'wall s':>8} {'vs read-all':>11} "
          f"{'peak RSS MB':>11} {'growth MB':>9}  notes")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            prefix = f"bench-{uuid.uuid4().hex[:8]}"
            changed = int(size * args.changed)
            same, moved = Path(tmp) / f"same-{size}.jsonl", Path(tmp) / f"moved-{size}.jsonl"
            try:
                t0 = time.perf_counter()
                load_index(url, prefix, size)
                write_source(same, size, 0)
                write_source(moved, size, changed)
                print(f"{size:>10,} loaded index + sources in {time.perf_counter() - t0:.1f}s")
                floor = run_phase("read-all", url, prefix, same)
                rows = [("read-all", floor, "baseline: list + page all states and chunks")]
                nothing = run_phase("nothing", url, prefix, same)
                rows.append(("nothing", nothing, f"{nothing['outcome']} {nothing['decided']} "
                                                 f"{nothing['seconds']}"))
                changed_run = run_phase("changed", url, prefix, moved)
                rows.append(("changed", changed_run,
                             f"{changed_run['outcome']} {changed_run['decided']} "
                             f"{changed_run['seconds']}"))
                per_doc = run_phase("per-doc", url, prefix, same)
                scale = size / per_doc["sampled"]
                per_doc = {**per_doc, "wall_s": per_doc["wall_s"] * scale}
                rows.append(("per-doc", per_doc, f"timed on {SAMPLE_PER_DOC}, x{scale:g}"))
                for name, r, note in rows:
                    print(f"{size:>10,} {name:>9} {r['wall_s']:>8.2f} "
                          f"{r['wall_s'] / floor['wall_s']:>11.2f} {r['peak_rss_mb']:>11.1f} "
                          f"{r['growth_mb']:>9.1f}  {note}")
                apply_s = changed_run["seconds"].get("apply", 0.0)
                print(f"{size:>10,} applying {changed:,} changed documents took {apply_s:.2f}s: "
                      f"{1000 * apply_s / max(1, changed):.2f} ms per changed document; "
                      f"reading and deciding took {changed_run['wall_s'] - apply_s:.2f}s")
            finally:
                client = Elasticsearch(url)
                client.options(ignore_status=404).indices.delete(index=f"{prefix}-*")
                for alias in ("chunks", "document-states"):
                    client.options(ignore_status=404).indices.delete_index_template(
                        name=f"{prefix}-{alias}")
                client.close()


if __name__ == "__main__":
    main()
