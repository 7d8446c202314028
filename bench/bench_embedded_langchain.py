"""The embedded replay beside LangChain's ``index()`` on the same change log, same run.

    .venv/bin/python bench/bench_embedded_langchain.py [--corpus PATH ...] [--rounds 3]

Needs the bench extra (``pip install -e '.[bench]'``). For each change log (both
corpora in ``../shared/corpora`` by default), in alternating rounds so both sides
see the same machine load:

- ours: ``policy-indexer replay LOG --to embedded`` into a fresh data directory,
  one whole process timed from start to exit (it exits once the index has
  caught up: chunks, terms for the keyword leg, states, delete step);
- baseline: ``bench/langchain_replay.py LOG``, one whole process: the same log
  split with ``MarkdownHeaderTextSplitter`` and handed to ``index()`` with an
  in-memory record manager and vector store (see its docstring).

Neither computes a real vector. Printed per log: the best and the median wall
time of each side, and the ratio baseline / ours of the medians (above 1: ours is
faster). The document count each side ends with is checked to be equal.

``--before TREE`` adds a third side in the same rounds: our replay run from
another checkout (``git worktree add /tmp/before HEAD~3``; its modules come first
on ``PYTHONPATH``), to measure a change against the code before it.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
DEFAULT = [CORPORA / "basecamp-policies.jsonl", CORPORA / "mozilla-legal-docs.jsonl.gz"]
CLI = str(Path(sys.executable).with_name("policy-indexer"))


def clean_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    env["POLICY_INDEXER_LOG_LEVEL"] = "WARNING"
    env.update({f"POLICY_INDEXER_{k.upper()}": v for k, v in settings.items()})
    return env


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{args[:3]} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, done.stdout + done.stderr


def ours(log: Path, tree: Path | None = None) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(prefix="bench-embedded-") as data:
        env = clean_env(embedded_dir=data, search_encoder="none")
        if tree is not None:
            env["PYTHONPATH"] = str(tree)
        elapsed, out = timed([CLI, "replay", str(log), "--to", "embedded"], env)
    found = re.search(r"index at .*: (\d+) documents", out)
    if found is None:
        raise SystemExit(f"no document count in the replay's output:\n{out[-2000:]}")
    return elapsed, int(found.group(1))


def baseline(log: Path) -> tuple[float, int]:
    elapsed, out = timed([sys.executable, str(ROOT / "bench" / "langchain_replay.py"),
                          str(log)], clean_env())
    found = re.search(r"(\d+) documents", out)
    if found is None:
        raise SystemExit(f"no document count in the baseline's output:\n{out[-2000:]}")
    return elapsed, int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, action="append", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None,
                        help="another checkout of this project, run as a third side")
    args = parser.parse_args()
    logs: list[Path] = args.corpus or DEFAULT
    missing = [str(p) for p in logs if not p.exists()]
    if missing:
        raise SystemExit(f"change log(s) not found: {', '.join(missing)} (../shared/corpora)")
    before: Path | None = args.before
    print(f"{'log':28} {'side':7} {'best':>7} {'median':>7} {'baseline/side':>13}")
    for log in logs:
        sides: dict[str, Callable[[], tuple[float, int]]] = {
            "ours": partial(ours, log), "langchain": partial(baseline, log)}
        if before is not None:
            sides["before"] = partial(ours, log, before)
        times: dict[str, list[float]] = {name: [] for name in sides}
        for n in range(args.rounds):
            order = list(sides)
            order = order[n % len(order):] + order[:n % len(order)]  # each side first in turn
            counts: dict[str, int] = {}
            for name in order:
                elapsed, counts[name] = sides[name]()
                times[name].append(elapsed)
            if len(set(counts.values())) != 1:
                raise SystemExit(f"{log.name}: the sides end with different document counts: "
                                 f"{counts}")
        base = statistics.median(times["langchain"])
        for name, got in times.items():
            print(f"{log.name:28} {name:7} {min(got):6.2f}s {statistics.median(got):6.2f}s "
                  f"{base / statistics.median(got):12.2f}x", flush=True)


if __name__ == "__main__":
    main()
