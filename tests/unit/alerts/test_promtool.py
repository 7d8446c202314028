"""promtool accepts the alert rules, and their unit tests (alerts/tests/*.yml) pass."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

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


def alert_rules() -> list[dict[str, Any]]:
    rules = []
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            rules += [rule for rule in group["rules"] if "alert" in rule]
    return rules


def test_every_alert_has_a_runbook_section() -> None:
    runbooks = (REPO_ROOT / "docs" / "runbooks.md").read_text(encoding="utf-8")
    anchors = {line.lstrip("#").strip().lower() for line in runbooks.splitlines()
               if line.startswith("## ")}
    for rule in alert_rules():
        name = rule["alert"]
        assert name.lower() in anchors, f"docs/runbooks.md has no '## {name}'"
        # Absolute once Prometheus has the external label runbooks_url (or the chart has
        # written monitoring.runbooksUrl in its place): one setting for where docs live.
        assert rule["annotations"]["runbook_url"] == (
            "{{ $externalLabels.runbooks_url }}#" + name.lower()), name
        assert rule["annotations"].get("summary") and rule["annotations"].get(
            "description"), name


def test_every_alert_follows_the_conventions_alertmanager_routes_on() -> None:
    """kube-prometheus routes and inhibits on severity critical/warning/info; a `for:` on
    every rule keeps one odd sample from notifying; one prefix groups ours; a summary
    without values groups notifications (the values are in the description)."""
    rules = alert_rules()
    assert len(rules) >= 16
    for rule in rules:
        name = rule["alert"]
        assert name.startswith("PolicyIndexer"), name
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, name
        assert re.fullmatch(r"\d+[smh]", str(rule.get("for", ""))), f"{name}: no for:"
        assert "{{" not in rule["annotations"]["summary"], f"{name}: summary has a value"
    severities = {rule["labels"]["severity"] for rule in rules}
    assert severities == {"critical", "warning", "info"}
    names = {rule["alert"] for rule in rules}
    assert {"PolicyIndexerWebhookUnavailable", "PolicyIndexerWebhookSignatureFailures",
            "PolicyIndexerWorkerRetrying"} <= names
