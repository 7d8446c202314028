"""``policy-indexer chunk`` beside LangChain's splitter on one large Markdown file, whole
process, same run.

    .venv/bin/python bench/bench_chunk_command.py [--rounds 5] [--corpora DIR]

Needs the bench extra (``pip install -e '.[bench]'``). The file: every HEAD
document of both corpora (the library after a full replay, as in
bench_chunker.py), one after the other, separated by a blank line, written to a
temporary directory (about 5.4 MB). In alternating rounds, so both sides see the
same machine load, each side is one process timed from start to exit with its
output going to a file:

- ours: ``policy-indexer chunk FILE`` (its JSON lines: ids, heading paths,
  token counts, links, metadata);
- baseline: ``bench/langchain_split.py FILE``: ``MarkdownHeaderTextSplitter``
  (h1-h6), each piece printed as JSON (text and heading metadata).

``--before TREE`` adds a third side in the same rounds: the command run from another
checkout (``git worktree add /tmp/before HEAD~1``; its modules first on ``PYTHONPATH``).

Printed: the best and the median wall time and MB/s of each side, the lines each
printed, and the ratio baseline / ours of the medians (above 1: ours is faster).
In-process throughput (no start-up, no output) is bench_chunker.py's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_chunker import CORPORA, head_documents

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).with_name("policy-indexer"))


def timed(args: list[str], out: Path, env: dict[str, str] | None) -> tuple[float, int]:
    with out.open("wb") as sink:
        start = time.perf_counter()
        done = subprocess.run(args, stdout=sink, stderr=subprocess.PIPE, env=env, check=False)
        elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{args[:3]} failed ({done.returncode}):\n{done.stderr[-2000:]!r}")
    with out.open("rb") as printed:
        return elapsed, sum(1 for _ in printed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--corpora", type=Path, default=CORPORA)
    parser.add_argument("--before", type=Path, default=None,
                        help="another checkout of this project, run as a third side")
    args = parser.parse_args()
    docs = head_documents(args.corpora)
    with tempfile.TemporaryDirectory(prefix="bench-chunk-") as tmp:
        source = Path(tmp) / "library.md"
        source.write_text("\n\n".join(content for _, _, content in docs), encoding="utf-8")
        megabytes = source.stat().st_size / 1e6
        sides = {
            "ours": [CLI, "chunk", str(source)],
            "langchain": [sys.executable, str(ROOT / "bench" / "langchain_split.py"),
                          str(source)],
        }
        envs: dict[str, dict[str, str] | None] = {name: None for name in sides}
        if args.before is not None:
            sides["before"] = sides["ours"]
            envs["before"] = {**os.environ, "PYTHONPATH": str(args.before)}
        times: dict[str, list[float]] = {name: [] for name in sides}
        lines: dict[str, int] = {}
        for n in range(args.rounds):
            turn = n % len(sides)  # each side first in turn
            order = list(sides)[turn:] + list(sides)[:turn]
            for name in order:
                elapsed, lines[name] = timed(sides[name], Path(tmp) / f"{name}.jsonl", envs[name])
                times[name].append(elapsed)
    print(f"{source.name}: {len(docs)} HEAD documents, {megabytes:.2f} MB, "
          f"{args.rounds} rounds")
    base = statistics.median(times["langchain"])
    print(f"{'side':10} {'best':>7} {'median':>7} {'MB/s':>6} {'lines':>6} {'baseline/side':>13}")
    for name, got in times.items():
        median = statistics.median(got)
        print(f"{name:10} {min(got):6.2f}s {median:6.2f}s {megabytes / median:6.2f} "
              f"{lines[name]:6d} {base / median:12.2f}x")


if __name__ == "__main__":
    main()
