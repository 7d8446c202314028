"""Replay a change log on the embedded mode, beside the Kafka + Elasticsearch mode, same run.

    .venv/bin/python bench/bench_embedded.py [--corpus PATH] [--limit N] [--workers 1]

1. Embedded: ``policy-indexer replay CORPUS --to embedded`` into a fresh data
   dir, timed from start to return (it returns once the index has caught up).
   Peak RSS of that one process (it queues, chunks, indexes: the whole pipeline).
2. Kafka + Elasticsearch: ``policy-indexer run`` worker process(es) on a fresh
   topic and index prefix; ``policy-indexer replay CORPUS --to kafka`` publishes;
   timed from the start of the publish to the moment every offset is committed.
   Peak RSS of the workers and the publisher; the Kafka and Elasticsearch JVMs'
   resident memory is printed beside it (shared servers, current RSS).
3. Both indexes must hold the same chunk ids at the end (checked).

The modes run one after the other, not at once, so they do not share the CPUs.
Needs the local services for step 2 (deploy/local/services up); cleans up.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from events.changelog import count_lines
from store.elasticsearch import ElasticsearchStore
from store.sqlite import SQLiteStore
from transport.kafka import ensure_topics

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the Kafka admin helpers tests use
from support.kafka_admin import delete_topics, group_lag  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpora" / "mozilla-legal-docs.jsonl.gz"
CLI = str(Path(sys.executable).with_name("policy-indexer"))
KAFKA = "127.0.0.1:9092"
ES = "http://127.0.0.1:9200"


def base_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    env["POLICY_INDEXER_LOG_LEVEL"] = "WARNING"
    env.update({f"POLICY_INDEXER_{k.upper()}": v for k, v in settings.items()})
    return env


def wait_rusage(proc: subprocess.Popen[bytes]) -> tuple[int, float]:
    """Wait for the child; its exit code and peak RSS in MB (from the kernel's accounting)."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024


def run_embedded(corpus: Path, limit: int | None, data: Path) -> tuple[float, float]:
    args = [CLI, "replay", str(corpus), "--to", "embedded"]
    args += ["--limit", str(limit)] if limit else []
    started = time.perf_counter()
    proc = subprocess.Popen(args, env=base_env(embedded_dir=str(data)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    code, rss = wait_rusage(proc)
    elapsed = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"embedded replay failed with exit code {code}")
    return elapsed, rss


def run_kafka(corpus: Path, limit: int | None, unique: str, workers: int) -> tuple[float, float]:
    topic, group = f"{unique}-changes", f"{unique}-group"
    env = base_env(pipeline="kafka", kafka_bootstrap_servers=KAFKA, kafka_topic=topic,
                   kafka_dead_letter_topic=f"{unique}-dlq", kafka_group_id=group,
                   elasticsearch_url=ES, index_prefix=unique, metrics_port="0")
    ensure_topics(KAFKA, [topic, f"{unique}-dlq"], partitions=3)
    procs = [subprocess.Popen([CLI, "run"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for _ in range(workers)]
    try:
        time.sleep(3)  # let the group form before timing starts
        args = [CLI, "replay", str(corpus), "--to", "kafka"]
        args += ["--limit", str(limit)] if limit else []
        started = time.perf_counter()
        publisher = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        code, publisher_rss = wait_rusage(publisher)
        if code != 0:
            raise SystemExit(f"kafka replay failed with exit code {code}")
        while group_lag(KAFKA, group, topic) != 0:
            if any(p.poll() is not None for p in procs):
                raise SystemExit("a worker exited during the benchmark")
            time.sleep(0.25)
        elapsed = time.perf_counter() - started
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
    worker_rss = [wait_rusage(p)[1] if p.returncode is None else float("nan") for p in procs]
    delete_topics(KAFKA, [topic, f"{unique}-dlq"])
    return elapsed, sum(worker_rss) + publisher_rss


def _rss_mb(pid: int) -> float:
    """Resident memory of a process and its direct children (a launcher and its JVM)."""
    children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                              text=True, check=False).stdout.split()
    total = 0.0
    for p in [str(pid), *children]:
        status = Path(f"/proc/{p}/status")
        if status.exists():
            for line in status.read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
    return total


def jvm_rss_mb() -> dict[str, float]:
    """Current resident memory of the local Kafka and Elasticsearch servers."""
    out = subprocess.run([str(ROOT / "deploy" / "local" / "services"), "status"],
                         capture_output=True, text=True, check=False).stdout
    return {
        name: _rss_mb(int(pid))
        for name, pid in re.findall(r"^(kafka|elasticsearch)\s.*\(pid (\d+)\)", out, re.M)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--workers", type=int, default=1, help="Kafka-mode worker processes.")
    args = parser.parse_args()
    if not args.corpus.exists():
        raise SystemExit(f"corpus not found: {args.corpus}")
    changes = args.limit or count_lines(args.corpus)
    unique = f"bench{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as tmp:
        emb_s, emb_rss = run_embedded(args.corpus, args.limit, Path(tmp) / "data")
        sqlite = SQLiteStore(Path(tmp) / "data" / "index.sqlite3")
        embedded_ids = {r.chunk_id for r in sqlite.iter_chunks()}
        sqlite.close()
    es = ElasticsearchStore.connect(ES, unique)
    try:
        kafka_s, kafka_rss = run_kafka(args.corpus, args.limit, unique, args.workers)
        es.refresh()
        es_ids = {r.chunk_id for r in es.iter_chunks()}
    finally:
        es.delete_everything()
        es.close()
    jvms = jvm_rss_mb()
    print(f"corpus: {args.corpus.name}, {changes} changes; Kafka mode: {args.workers} worker(s)")
    print(f"{'mode':<26}{'seconds':>9}{'changes/s':>11}{'peak RSS MB':>13}")
    print(f"{'embedded (1 process)':<26}{emb_s:>9.1f}{changes / emb_s:>11.1f}{emb_rss:>13.0f}")
    print(f"{'kafka + elasticsearch':<26}{kafka_s:>9.1f}{changes / kafka_s:>11.1f}"
          f"{kafka_rss:>13.0f}  (workers + publisher)")
    print(f"embedded / kafka+es throughput: {kafka_s / emb_s:.2f}x")
    print("servers beside the Kafka mode (current RSS MB): "
          + ", ".join(f"{k} {v:.0f}" for k, v in sorted(jvms.items())))
    same = embedded_ids == es_ids
    print(f"same chunk ids in both indexes: {same} ({len(embedded_ids)} chunks)")
    if not same:
        raise SystemExit(f"indexes differ: {len(embedded_ids ^ es_ids)} chunk ids")


if __name__ == "__main__":
    main()
