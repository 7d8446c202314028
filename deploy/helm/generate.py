"""Copy the chart's generated files from their one source in the repository.

    python deploy/helm/generate.py           # rewrite policy-indexer/files/
    python deploy/helm/generate.py --check   # exit 1 if a copy differs or is missing

Helm reads only files inside the chart, so the alert rules (alerts/*.yml) and the Grafana
dashboard (deploy/grafana/dashboards/policy-indexer.json) are copied into
policy-indexer/files/, byte for byte; the templates substitute the runbooks URL at install
time. A rule file added to alerts/ is copied too, and a removed one is removed.
tests/unit/deploy/test_helm_chart.py runs --check.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FILES = HERE / "policy-indexer" / "files"


def wanted() -> dict[Path, bytes]:
    """Destination path -> content, for every generated file."""
    out = {FILES / "alerts" / p.name: p.read_bytes()
           for p in sorted((REPO / "alerts").glob("*.yml"))}
    board = REPO / "deploy" / "grafana" / "dashboards" / "policy-indexer.json"
    out[FILES / "dashboards" / board.name] = board.read_bytes()
    return out


def stale() -> list[str]:
    """What --check reports: copies that differ, are missing, or have no source any more."""
    want = wanted()
    problems = [f"{p.relative_to(REPO)} differs from its source" for p, data in want.items()
                if p.exists() and p.read_bytes() != data]
    problems += [f"{p.relative_to(REPO)} is missing" for p in want if not p.exists()]
    present = {p for folder in ("alerts", "dashboards") for p in (FILES / folder).glob("*")}
    problems += [f"{p.relative_to(REPO)} has no source" for p in sorted(present - set(want))]
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="generate.py", allow_abbrev=False,
                                     description="Copy alerts/ and the dashboard into the chart.")
    parser.add_argument("--check", action="store_true", help="report, change nothing")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale()
        for problem in problems:
            print(f"{problem}: run python deploy/helm/generate.py", file=sys.stderr)
        return 1 if problems else 0
    want = wanted()
    for folder in ("alerts", "dashboards"):
        (FILES / folder).mkdir(parents=True, exist_ok=True)
        for path in (FILES / folder).glob("*"):
            if path not in want:
                path.unlink()
    for path, data in want.items():
        path.write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
