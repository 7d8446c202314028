"""Start-up of the command line beside a bare interpreter, in the same run.

    .venv/bin/python bench/bench_cli_startup.py [--rounds 15]

Each round starts, in alternating order so both see the same machine load:
``python -c pass`` (the baseline), ``policy-indexer --help``, ``policy-indexer
config`` (settings read, logging set up, one command imported) and ``python
-c "import policy_indexer.commands.run"``. The median of each is printed, and
``--help``'s distance from the bare interpreter (goal: within 0.25 s). No server
is needed: ``config`` prints the settings.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).with_name("policy-indexer")
CASES: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "policy-indexer --help": [str(BIN), "--help"],
    "policy-indexer config": [str(BIN), "config"],
    "policy-indexer status --help": [str(BIN), "status", "--help"],
}


def once(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for n in range(args.rounds):
        order = list(CASES.items())
        if n % 2:
            order.reverse()
        for name, argv in order:
            times[name].append(once(argv))
    base = statistics.median(times["python -c pass"])
    print(f"{'command':<30} {'median s':>9} {'- bare python':>14}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<30} {median:9.3f} {median - base:+14.3f}")
    gap = statistics.median(times["policy-indexer --help"]) - base
    print(f"--help is {gap:.3f} s above a bare interpreter (goal: within 0.25 s): "
          f"{'met' if gap <= 0.25 else 'NOT met'}")


if __name__ == "__main__":
    main()
