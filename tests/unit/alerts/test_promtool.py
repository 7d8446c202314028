"""promtool accepts the alert rules, and their unit tests (alerts/tests/*.yml) pass."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
RULE_FILES = sorted((REPO_ROOT / "alerts").glob("*.yml"))
RULE_TESTS = sorted((REPO_ROOT / "alerts" / "tests").glob("*.yml"))


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("promtool")
    if binary is None:
        pytest.fail("promtool is missing: scripts/install installs the Debian package prometheus")
    return subprocess.run([binary, *args], capture_output=True, text=True, check=False)


def test_there_are_rules_and_rule_tests() -> None:
    assert RULE_FILES, "no alerts/*.yml"
    assert RULE_TESTS, "no alerts/tests/*.yml"


@pytest.mark.parametrize("rules", RULE_FILES, ids=lambda p: p.name)
def test_promtool_check_rules(rules: Path) -> None:
    result = promtool("check", "rules", str(rules))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("tests", RULE_TESTS, ids=lambda p: p.name)
def test_promtool_test_rules(tests: Path) -> None:
    result = promtool("test", "rules", str(tests))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_every_alert_has_a_runbook_section() -> None:
    import yaml

    runbooks = (REPO_ROOT / "docs" / "runbooks.md").read_text(encoding="utf-8")
    anchors = {line.lstrip("#").strip().lower() for line in runbooks.splitlines()
               if line.startswith("## ")}
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                if "alert" not in rule:
                    continue
                name = rule["alert"]
                assert name.lower() in anchors, f"docs/runbooks.md has no '## {name}'"
                assert rule["annotations"]["runbook_url"].endswith(f"#{name.lower()}")
                assert rule["annotations"].get("summary") and rule["annotations"].get(
                    "description"), name
