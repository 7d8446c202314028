"""deploy/sizing/sample.py, which docs/deploy.md's sizing figures come from, reports the CPU
and memory of the processes it follows, and only those."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
# A child that spins for about a second and holds ~60 MB, beside one that only sleeps.
CHILD = ("import time; block = bytearray(60 * 1024 * 1024); end = time.time() + 1.0\n"
         "while time.time() < end: pass  # followed-spinner")
SLEEPER = "import time; time.sleep(1.5)  # followed-sleeper"


def test_the_sampler_measures_the_matching_processes_only() -> None:
    # the children's code comes through the environment, so the parent's own command line
    # does not contain the marker
    parent = ("import os, subprocess, sys; "
              "a = subprocess.Popen([sys.executable, '-c', os.environ['CHILD']]); "
              "b = subprocess.Popen([sys.executable, '-c', os.environ['SLEEPER']]); "
              "a.wait(); b.wait()")
    env = {**os.environ, "CHILD": CHILD, "SLEEPER": SLEEPER}
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "deploy/sizing/sample.py"), "--match",
         "followed-spinner", "--every", "0.1", "--window", "0.5", "--", sys.executable, "-c",
         parent], capture_output=True, text=True, timeout=60, check=False, env=env)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("[sample]")]
    assert len(lines) == 1, result.stdout  # the sleeper and the parent are not followed
    cpu = float(re.search(r"cpu (\d+\.\d) s", lines[0]).group(1))  # type: ignore[union-attr]
    rss = int(re.search(r"peak RSS (\d+) MB", lines[0]).group(1))  # type: ignore[union-attr]
    busiest = float(re.search(r"busiest 0.5 s (\d+\.\d+) cores", lines[0]).group(1))  # type: ignore[union-attr]
    assert 0.5 <= cpu <= 1.5, lines[0]
    assert busiest >= 0.5, lines[0]
    assert rss >= 60, lines[0]


def test_the_sampler_refuses_unknown_options() -> None:
    result = subprocess.run([sys.executable, str(REPO_ROOT / "deploy/sizing/sample.py"),
                             "--match", "x", "--evrey", "1", "--", "true"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 2 and "unrecognized arguments: --evrey" in result.stderr
