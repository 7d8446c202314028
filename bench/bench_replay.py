"""End-to-end replay benchmark of the indexing worker, beside a raw bulk write in the same run.

    .venv/bin/python bench/bench_replay.py [--corpus PATH] [--workers 2] [--latency-changes 300]
    .venv/bin/python bench/bench_replay.py --cluster --workers 1,2,3 --partitions 3,6,12 \
        --latency-changes 0 --profile     # the scale table of docs/capacity.md

1. Raw bulk (the physical limit): every chunk of every upsert of the corpus,
   chunked beforehand, bulk-written straight into a fresh index (same mappings,
   same bulk cut of 500 actions / 5 MB).
2. End to end: the whole change log published to a fresh Kafka topic, consumed by
   ``policy-indexer run`` worker processes into a fresh index, timed from the
   first publish to the moment every offset is committed. Changes/s, chunks/s,
   ratio to the raw bulk rate.
3. Latency: new documents published at a steady 20 changes/s; for each, the time
   from publish to the first search that returns its chunks (refresh interval 1 s).
4. Each worker's peak RSS (VmHWM), read from /proc before it stops.

Needs the local services (deploy/local/services up). Cleans up its topics and indices.

``--cluster`` runs on the replicated loopback cluster instead (``deploy/local/services up
--cluster``): every broker and node in the clients' lists, topics at replication factor 3
and min.insync.replicas=2, indices with 1 replica. ``--workers`` and ``--partitions`` take
lists: step 2 then runs once per (workers, partitions), each on a fresh topic and index,
with the 1-minute load average before and after it. ``--profile`` samples the first worker
of each run with py-spy (``pip install py-spy``; every thread, idle ones too) and prints
where its time went.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from chunker import chunk_document
from events.changelog import read_changelog
from events.model import Action, ChangeEvent
from store import es_mappings
from store.elasticsearch import ElasticsearchStore
from transport.kafka import ensure_topics, new_producer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the Kafka admin helpers tests use
from support.kafka_admin import delete_topics, group_lag  # noqa: E402

sys.path.insert(0, str(ROOT / "deploy" / "local"))  # the cluster's ports
from devservices.cluster import load_cluster  # noqa: E402
from devservices.config import load_config  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpora" / "mozilla-legal-docs.jsonl.gz"
CLI = str(Path(sys.executable).with_name("policy-indexer"))


def wait_lag_zero(bootstrap: str, group: str, topic: str, timeout_s: float = 1800) -> float:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if group_lag(bootstrap, group, topic) == 0:
            return time.monotonic()
        time.sleep(0.25)
    raise SystemExit(f"workers did not catch up within {timeout_s}s")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scrape(ports: list[int]) -> dict[str, float]:
    """Sum the workers' counters (name{labels} -> value) from their /metrics."""
    totals: dict[str, float] = {}
    for port in ports:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            for family in text_string_to_metric_families(resp.read().decode()):
                for sample in family.samples:
                    labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                    key = f"{sample.name}{{{labels}}}" if labels else sample.name
                    totals[key] = totals.get(key, 0.0) + sample.value
    return totals


def chunk_all(events: list[ChangeEvent]) -> tuple[list[object], float]:
    started = time.perf_counter()
    chunks: list[object] = []
    for e in events:
        if e.action is Action.UPSERT and e.content is not None:
            chunks.extend(chunk_document(
                e.document_id, e.version, e.content, content_type=e.content_type or "text/markdown",
                metadata=e.metadata.overrides(), changed_at=e.changed_at,
            ))
    return chunks, time.perf_counter() - started


def raw_bulk(es_urls: list[str], chunks: list[object], replicas: int = 0) -> float:
    store = ElasticsearchStore.connect(es_urls, f"bench-raw-{uuid.uuid4().hex[:8]}",
                                       layout=es_mappings.IndexLayout(replicas=replicas))
    store.ensure_ready()
    try:
        started = time.perf_counter()
        for i in range(0, len(chunks), 2000):
            store.write_chunks(chunks[i : i + 2000])  # type: ignore[arg-type]
        store.refresh()
        return time.perf_counter() - started
    finally:
        store.delete_everything()
        store.close()


def worker_env(bootstrap: str, es_url: str, prefix: str, *, replicated: bool = False,
               partitions: int = 4) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    if replicated:
        env.update({"POLICY_INDEXER_ELASTICSEARCH_URLS": es_url,
                    "POLICY_INDEXER_INDEX_REPLICAS": "1",
                    "POLICY_INDEXER_KAFKA_REPLICATION_FACTOR": "3",
                    "POLICY_INDEXER_KAFKA_MIN_INSYNC_REPLICAS": "2"})
        es_url = es_url.split(",", maxsplit=1)[0]
    env.update({
        "POLICY_INDEXER_KAFKA_PARTITIONS": str(partitions),
        "POLICY_INDEXER_PIPELINE": "kafka",
        "POLICY_INDEXER_KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "POLICY_INDEXER_KAFKA_TOPIC": f"{prefix}-changes",
        "POLICY_INDEXER_KAFKA_DEAD_LETTER_TOPIC": f"{prefix}-dlq",
        "POLICY_INDEXER_KAFKA_GROUP_ID": f"{prefix}-group",
        "POLICY_INDEXER_ELASTICSEARCH_URL": es_url,
        "POLICY_INDEXER_INDEX_PREFIX": prefix,
        "POLICY_INDEXER_METRICS_PORT": "0",
        "POLICY_INDEXER_LOG_LEVEL": "WARNING",
        "POLICY_INDEXER_KAFKA_SESSION_TIMEOUT_MS": "6000",
    })
    return env


def publish(bootstrap: str, topic: str, events: list[ChangeEvent], rate: float | None = None,
            sent_at: dict[str, float] | None = None) -> None:
    producer = new_producer(bootstrap)
    started = time.monotonic()
    for i, e in enumerate(events):
        if rate:
            delay = started + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        producer.send(topic, key=e.document_id.encode(), value=e.to_json_bytes())
        if sent_at is not None:
            sent_at[e.document_id] = time.monotonic()
    producer.flush(timeout=120)
    producer.close(timeout=10)


def latency_probe(store: ElasticsearchStore, sent_at: dict[str, float], expected: int,
                  seen_at: dict[str, float], stop: threading.Event) -> None:
    while not stop.is_set() and len(seen_at) < expected:
        pending = [d for d in sent_at if d not in seen_at]
        if pending:
            resp = store.client.search(
                index=store.names.chunks, size=0,
                query={"terms": {"document_id": pending[:1000]}},
                aggs={"docs": {"terms": {"field": "document_id", "size": 1000}}},
            )
            now = time.monotonic()
            for bucket in resp["aggregations"]["docs"]["buckets"]:
                seen_at.setdefault(bucket["key"], now)
        time.sleep(0.02)


# Where a worker's time goes: each py-spy sample (a thread's stack) goes to the first of
# these categories one of its frames names (in this order); a sample matching none is
# "other". Waits are included: a thread blocked in a socket or on an event is sampled too.
CATEGORIES = (
    ("waiting for the chunk writer (its bulks)", ("ChunkWriter.finish",)),
    ("Kafka poll (fetch, decode, wait)", ("KafkaConsumer.poll",)),
    ("Kafka commit", ("KafkaConsumer.commit",)),
    ("chunking", ("chunker/",)),
    ("Elasticsearch requests", ("elasticsearch/", "elastic_transport/", "urllib3/",
                                "http/client.py")),
    ("parse and JSON (pydantic, json)", ("pydantic", "json/", "events/model.py")),
    ("indexing logic (guard, state, delete)", ("indexing/", "deleter/", "store/")),
    ("metrics and health", ("prometheus_client/", "policy_indexer/runtime/http")),
    ("idle (the writer waiting for work)", ("queue.py", "threading.py")),
)


def start_profile(pid: int, out: Path) -> subprocess.Popen[bytes] | None:
    spy = Path(sys.executable).with_name("py-spy")
    if not spy.exists():
        print("  (no py-spy in the virtualenv: pip install py-spy; not profiled)")
        return None
    return subprocess.Popen(
        [str(spy), "record", "--pid", str(pid), "--format", "raw", "--output", str(out),
         "--rate", "50", "--idle", "--threads", "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_profile(spy: subprocess.Popen[bytes] | None, out: Path) -> dict[str, dict[str, float]]:
    """Stop py-spy (SIGINT writes the file); the worker loop's samples (MainThread) and the
    chunk writer's (``chunk-writer``) shared out by category, each summing to 1."""
    if spy is None:
        return {}
    spy.send_signal(signal.SIGINT)
    try:
        spy.wait(timeout=60)
    except subprocess.TimeoutExpired:
        spy.kill()
    if not out.exists():
        return {}
    counts: dict[str, collections.Counter[str]] = {"loop": collections.Counter(),
                                                   "chunk-writer": collections.Counter()}
    for line in out.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        thread = frames[0].rpartition(": ")[2]
        which = "loop" if thread == "MainThread" else (
            "chunk-writer" if thread.startswith("chunk-writer") else None)
        if which is None or not n.isdigit():
            continue
        counts[which][categorize(frames[1:])] += int(n)
    return {which: {name: k / sum(c.values()) for name, k in c.most_common()}
            | {"_samples": float(sum(c.values()))}
            for which, c in counts.items() if c}


def categorize(frames: list[str]) -> str:
    return next((name for name, marks in CATEGORIES
                 if any(mark in frame for frame in frames for mark in marks)), "other")


def load_average() -> float:
    return os.getloadavg()[0]


def end_to_end(args: argparse.Namespace, events: list[ChangeEvent], chunks: list[object],
               raw_rate: float, *, workers_n: int, partitions: int,
               refresh: str = "true") -> dict[str, object]:
    prefix = f"bench-{uuid.uuid4().hex[:8]}"
    topic, group = f"{prefix}-changes", f"{prefix}-group"
    ensure_topics(args.bootstrap, [topic, f"{prefix}-dlq"], partitions=partitions,
                  **({"replication_factor": 3, "min_insync_replicas": 2} if args.cluster else {}))
    env = worker_env(args.bootstrap, args.elasticsearch, prefix, replicated=args.cluster,
                     partitions=partitions)
    env["POLICY_INDEXER_REFRESH_WHEN_CAUGHT_UP"] = refresh
    ports = [free_port() for _ in range(workers_n)]
    workers = [
        subprocess.Popen([CLI, "run"], env={**env, "POLICY_INDEXER_METRICS_PORT": str(port)})
        for port in ports
    ]
    store = ElasticsearchStore.connect(args.elasticsearch.split(","), prefix)
    figures: dict[str, object] = {"workers": workers_n, "partitions": partitions}
    try:
        # Warm-up: every worker has joined the group and the indices exist.
        warm = ChangeEvent.model_validate({**events[0].model_dump(), "document_id": "warm-up"})
        publish(args.bootstrap, topic, [warm])
        wait_lag_zero(args.bootstrap, group, topic)
        time.sleep(8)  # let a second worker's join rebalance settle

        profile_out = ROOT / ".local" / f"bench-replay-{prefix}.pyspy.txt"
        profile_out.parent.mkdir(exist_ok=True)
        spy = start_profile(workers[0].pid, profile_out) if args.profile else None
        figures["load_before"] = round(load_average(), 2)
        started = time.monotonic()
        publish(args.bootstrap, topic, events)
        published = time.monotonic() - started
        done = wait_lag_zero(args.bootstrap, group, topic)
        e2e_s = done - started
        figures["load_after"] = round(load_average(), 2)
        profile = stop_profile(spy, profile_out)
        e2e_chunk_rate = len(chunks) / e2e_s
        figures.update(seconds=round(e2e_s, 1), changes_per_s=round(len(events) / e2e_s, 1),
                       chunks_per_s=round(e2e_chunk_rate), publish_s=round(published, 1))
        print(f"end to end ({workers_n} workers, {partitions} partitions): "
              f"{len(events) / e2e_s:,.1f} changes/s, {e2e_chunk_rate:,.0f} chunks/s "
              f"({e2e_s:.1f} s); ratio to raw bulk: {e2e_chunk_rate / raw_rate:.0%}; "
              f"load average {figures['load_before']} before, {figures['load_after']} after")
        print(f"  of which publishing the change log (this process): {published:.1f} s")
        totals = scrape(ports)
        written = totals.get("policy_indexer_chunks_written_total", 0.0)
        outcomes = {k.split('"')[1]: int(v) for k, v in totals.items()
                    if k.startswith("policy_indexer_events_total{") and v}
        figures["chunks_written"] = int(written)
        print(f"  chunks the workers actually wrote: {written:,.0f} ({written / e2e_s:,.0f}/s; "
              f"versions superseded inside a batch are not written); events: {outcomes}")
        for which, shares in profile.items():
            samples = shares.pop("_samples")
            figures[f"profile_{which}"] = {k: round(v, 3) for k, v in shares.items()}
            print(f"  worker 1's {which} thread (py-spy, {samples:.0f} samples at 50/s, waits "
                  f"included): " + ", ".join(f"{k} {v:.0%}" for k, v in shares.items()))
        if profile:
            print(f"  raw stacks: {profile_out}")

        store.refresh()
        stats = store.client.indices.stats(index=store.names.chunks)["_all"]
        figures["chunk_docs"] = int(stats["primaries"]["docs"]["count"])
        figures["chunk_index_mb"] = round(stats["primaries"]["store"]["size_in_bytes"] / 2**20, 1)
        figures["chunk_index_mb_with_replicas"] = round(
            stats["total"]["store"]["size_in_bytes"] / 2**20, 1)
        print(f"  chunk index: {figures['chunk_docs']:,} chunks (final state), "
              f"{figures['chunk_index_mb']} MB primaries, "
              f"{figures['chunk_index_mb_with_replicas']} MB with replicas (no vectors)")

        if args.latency_changes:
            figures.update(latency(args, events, topic, store, ports))
        rss = [peak_rss_mb(w.pid) for w in workers]
        figures["peak_rss_mb"] = [round(r) for r in rss]
        print("worker peak RSS: " + ", ".join(f"{r:.0f} MB" for r in rss))
    finally:
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.wait(timeout=60)
            except subprocess.TimeoutExpired:
                w.kill()
        store.delete_everything()
        store.close()
        delete_topics(args.bootstrap, [topic, f"{prefix}-dlq"])
    return figures


def latency(args: argparse.Namespace, events: list[ChangeEvent], topic: str,
            store: ElasticsearchStore, ports: list[int]) -> dict[str, float]:
    """Latency at a steady 20 changes/s: new documents, one version each; beside it, the
    workers' own time per batch (their ``event_processing_seconds`` over the same step),
    so the rest is Kafka's delivery and the index's refresh."""
    upserts = [e for e in events if e.action is Action.UPSERT][: args.latency_changes]
    probes = [
        ChangeEvent.model_validate({**e.model_dump(), "document_id": f"lat-{i}-{e.document_id}",
                                    "version": 1})
        for i, e in enumerate(upserts)
    ]
    probes = [p for p in probes if chunk_document(p.document_id, 1, p.content or "")]
    sent_at: dict[str, float] = {}
    seen_at: dict[str, float] = {}
    stop = threading.Event()
    probe = threading.Thread(
        target=latency_probe, args=(store, sent_at, len(probes), seen_at, stop), daemon=True
    )
    probe.start()
    before = scrape(ports)
    publish(args.bootstrap, topic, probes, rate=20.0, sent_at=sent_at)
    probe.join(timeout=60)
    stop.set()
    handling = processing_times(before, scrape(ports))
    latencies = sorted(seen_at[d] - sent_at[d] for d in seen_at)
    missing = len(probes) - len(latencies)
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(f"publish-to-searchable at 20 changes/s ({len(latencies)} changes): "
          f"p50 {p50:.2f} s, p99 {p99:.2f} s" + (f", {missing} never seen" if missing else ""))
    print(f"  of which the workers' handling (a batch, delete step included): mean "
          f"{handling['handling_mean_s']:.3f} s, p99 <= {handling['handling_p99_le_s']} s")
    return {"p50_s": round(p50, 2), "p99_s": round(p99, 2), **handling}


def processing_times(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Mean and p99 bucket (an upper bound) of the event-processing histogram between
    two scrapes."""
    name = "policy_indexer_event_processing_seconds"

    def delta(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    count = delta(f"{name}_count")
    buckets = sorted(
        (float(k.split('le="')[1].split('"')[0]), delta(k))
        for k in after if k.startswith(f"{name}_bucket{{")
    )
    p99 = next((le for le, n in buckets if count and n >= 0.99 * count), float("inf"))
    return {"handling_mean_s": round(delta(f"{name}_sum") / count, 3) if count else float("nan"),
            "handling_p99_le_s": p99}


def counts(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--workers", type=counts, default=[2], help="e.g. 2, or 1,2,3")
    parser.add_argument("--partitions", type=counts, default=[4], help="e.g. 4, or 3,6,12")
    parser.add_argument("--latency-changes", type=int, default=300, help="0: no latency step")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--elasticsearch", default="http://127.0.0.1:9200",
                        help="a node's URL, or several separated by commas")
    parser.add_argument("--cluster", action="store_true",
                        help="the replicated loopback cluster (deploy/local/services --cluster)")
    parser.add_argument("--profile", action="store_true", help="py-spy the first worker")
    parser.add_argument("--no-raw-bulk", action="store_true", help="skip step 1")
    parser.add_argument("--limit", type=int, help="only the first LIMIT changes of the log")
    parser.add_argument("--json", type=Path, help="append each run's figures to this file")
    parser.add_argument("--refresh-when-caught-up", type=lambda v: v.split(","),
                        default=["true"],
                        help="the workers' POLICY_INDEXER_REFRESH_WHEN_CAUGHT_UP; 'true,false' "
                        "runs each, one after the other")
    args = parser.parse_args()
    if args.cluster:
        _cfg, layout = load_cluster(os.environ, load_config(os.environ))
        args.bootstrap, args.elasticsearch = layout.bootstrap, ",".join(layout.es_urls)

    events = list(read_changelog(args.corpus))[: args.limit]
    chunks, chunk_s = chunk_all(events)
    print(f"corpus: {args.corpus.name}: {len(events)} changes, "
          f"{len(chunks)} chunks of all versions")
    print(f"chunker alone (one process): {len(events) / chunk_s:,.0f} changes/s ({chunk_s:.1f} s)")

    raw_rate = float("nan")
    if not args.no_raw_bulk:
        raw_s = raw_bulk(args.elasticsearch.split(","), chunks, replicas=1 if args.cluster else 0)
        raw_rate = len(chunks) / raw_s
        print(f"raw bulk into ES:            {raw_rate:,.0f} chunks/s ({raw_s:.1f} s); "
              f"load average {load_average():.2f}")

    for partitions, workers_n, refresh in itertools.product(
            args.partitions, args.workers, args.refresh_when_caught_up):
        print(f"-- refresh when caught up: {refresh}")
        figures = end_to_end(args, events, chunks, raw_rate, workers_n=workers_n,
                             partitions=partitions, refresh=refresh)
        if args.json:
            row = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "cluster": args.cluster,
                   "raw_bulk_chunks_per_s": None if math.isnan(raw_rate) else round(raw_rate),
                   "refresh_when_caught_up": refresh, **figures}
            with args.json.open("a") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
