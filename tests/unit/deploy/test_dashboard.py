"""The dashboard a person opens: variables that filter every query, a grid without holes or
overlaps, thresholds at the configured bounds, runbook links that land on a section, and a
generator that refuses what it does not understand."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from policy_indexer.settings import Settings

REPO_ROOT = Path(__file__).resolve().parents[3]
GENERATOR = REPO_ROOT / "deploy" / "grafana" / "dashboard.py"
BOARD = REPO_ROOT / "deploy" / "grafana" / "dashboards" / "policy-indexer.json"
METRIC_SELECTOR = re.compile(r"\b((?:policy_indexer_[a-z0-9_]+)|up)(\{[^}]*\})?")


def board() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(BOARD.read_text(encoding="utf-8"))
    return loaded


def generate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(GENERATOR), *args], capture_output=True,
                          text=True, check=False)


def test_the_generator_refuses_an_unknown_argument_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "board.json"
    result = generate("--out", str(out), "--lag-bound", "60")
    assert result.returncode == 2
    assert "unrecognized arguments: --lag-bound" in result.stderr
    assert not out.exists()
    bad = generate("--out", str(out), "--lag-bound-seconds", "-5")
    assert bad.returncode == 2 and "--lag-bound-seconds" in bad.stderr and "-5" in bad.stderr
    assert not out.exists()


def test_thresholds_follow_the_configured_bounds(tmp_path: Path) -> None:
    defaults = Settings.model_fields
    thresholds = {p["title"]: p["fieldConfig"]["defaults"]["thresholds"]["steps"][-1]["value"]
                  for p in board()["panels"] if p["type"] != "row"
                  and len(p["fieldConfig"]["defaults"]["thresholds"]["steps"]) > 1}
    assert thresholds["Max lag and p95"] == defaults["freshness_lag_bound_seconds"].default
    assert thresholds["Oldest leftover"] == defaults["leftover_bound_seconds"].default

    out = tmp_path / "board.json"
    result = generate("--out", str(out), "--lag-bound-seconds", "900",
                      "--runbooks-url", "https://docs.example.org/runbooks.md")
    assert result.returncode == 0, result.stderr
    custom = json.loads(out.read_text())
    lag = next(p for p in custom["panels"] if p["title"] == "Max lag and p95")
    assert lag["fieldConfig"]["defaults"]["thresholds"]["steps"][-1]["value"] == 900
    constant = next(v for v in custom["templating"]["list"] if v["name"] == "runbooks_url")
    assert constant["query"] == "https://docs.example.org/runbooks.md"


def test_every_query_is_filtered_by_the_job_namespace_and_instance_variables() -> None:
    variables = {v["name"]: v for v in board()["templating"]["list"]}
    assert {"datasource", "job", "namespace", "instance"} <= set(variables)
    for name in ("job", "namespace", "instance"):
        assert variables[name]["includeAll"] and variables[name]["allValue"] == ".*"
    for panel in board()["panels"]:
        for target in panel.get("targets", []):
            selectors = METRIC_SELECTOR.findall(target["expr"])
            assert selectors, target["expr"]
            for metric, labels in selectors:
                for var in ("$job", "$namespace", "$instance"):
                    assert var in labels, f"{panel['title']}: {metric} lacks {var}"
            assert target["datasource"]["uid"] == "${datasource}"


def test_rows_and_a_tidy_grid() -> None:
    panels = board()["panels"]
    assert panels[0]["type"] == "row"
    assert sum(p["type"] == "row" for p in panels) >= 4
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps at {(x, y)}"
                cells.add((x, y))
    bottom = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels)
    assert len(cells) == 24 * bottom, "the grid has holes"


def test_runbook_links_land_on_a_runbook_section() -> None:
    runbooks = (REPO_ROOT / "docs" / "runbooks.md").read_text(encoding="utf-8")
    anchors = {line[3:].strip().lower() for line in runbooks.splitlines()
               if line.startswith("## ")}
    links = [link["url"] for p in board()["panels"] for link in p.get("links", [])]
    assert len(links) >= 8
    for url in links:
        base, _, anchor = url.partition("#")
        assert base == "${runbooks_url}" and anchor in anchors, url
