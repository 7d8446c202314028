"""CPU and memory of the policy-indexer processes a command starts, for docs/deploy.md's sizing.

    python deploy/sizing/sample.py --match "policy-indexer run" -- python bench/bench_replay.py

Runs the command and, every ``--every`` seconds, reads /proc for it and each of its
descendant processes whose command line contains ``--match``: CPU time (utime + stime) and resident
memory (VmRSS, VmHWM). At the end it prints, per process: lifetime, CPU seconds, mean
cores over its life, the busiest ``--window``-second stretch in cores, the median of the
per-sample rates (the steady load), and peak RSS. Linux only; no dependency.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Trace:
    cmdline: str
    samples: list[tuple[float, float]] = field(default_factory=list)  # (time, cpu seconds)
    peak_rss_kb: int = 0


def children(root: int) -> set[int]:
    """Every descendant of root (from /proc/*/stat's ppid)."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, ppid in parent.items() if ppid in frontier} - found
        found |= frontier
    return found


def read(pid: int) -> tuple[str, float, int] | None:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    hwm = next((int(line.split()[1]) for line in status.splitlines()
                if line.startswith("VmHWM:")), 0)
    return cmdline.strip(), cpu, hwm


def summarize(trace: Trace, window_s: float) -> str:
    points = trace.samples
    life = points[-1][0] - points[0][0] if len(points) > 1 else 0.0
    cpu = points[-1][1] - points[0][1] if len(points) > 1 else 0.0
    rates = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in itertools.pairwise(points)
             if b[0] > a[0]]
    busiest = 0.0
    for i, (start, cpu0) in enumerate(points):
        for end, cpu1 in points[i + 1:]:
            if end - start >= window_s:
                busiest = max(busiest, (cpu1 - cpu0) / (end - start))
                break
    median = statistics.median(rates) if rates else 0.0
    mean = cpu / life if life else 0.0
    return (f"{trace.cmdline[:70]}: life {life:.1f} s, cpu {cpu:.1f} s, mean {mean:.2f} cores,"
            f" busiest {window_s:g} s {busiest:.2f} cores, median {median:.2f} cores, "
            f"peak RSS {trace.peak_rss_kb / 1024:.0f} MB")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="sample.py", allow_abbrev=False)
    parser.add_argument("--match", required=True, help="substring of the command lines to follow")
    parser.add_argument("--every", type=float, default=0.5)
    parser.add_argument("--window", type=float, default=5.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    proc = subprocess.Popen(command)
    traces: dict[int, Trace] = {}
    while proc.poll() is None:
        now = time.monotonic()
        for pid in {proc.pid} | children(proc.pid):
            seen = read(pid)
            if seen is None or args.match not in seen[0]:
                continue
            trace = traces.setdefault(pid, Trace(seen[0]))
            trace.samples.append((now, seen[1]))
            trace.peak_rss_kb = max(trace.peak_rss_kb, seen[2])
        time.sleep(args.every)
    for pid, trace in sorted(traces.items()):
        print(f"[sample] pid {pid} {summarize(trace, args.window)}", flush=True)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
