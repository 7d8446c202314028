"""The production Alertmanager example passes `amtool check-config`, and its routing tree
sends each severity where deploy/alertmanager/alertmanager.yml says (`amtool config routes
test --verify.receivers`, which exits non-zero on any other answer)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from support.deploy_tools import tool

REPO_ROOT = Path(__file__).resolve().parents[3]
CONFIGS = [REPO_ROOT / "deploy" / "alertmanager" / "alertmanager.yml",
           REPO_ROOT / "deploy" / "compose" / "alertmanager.yml"]
PRODUCTION = CONFIGS[0]


def amtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tool("amtool")), *args], capture_output=True, text=True,
                          check=False, timeout=60)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.parent.name)
def test_amtool_check_config(config: Path) -> None:
    result = amtool("check-config", str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize(("labels", "receivers"), [
    (["severity=critical", "alertname=PolicyIndexerLagAboveBound"], "oncall-pager,team-chat"),
    (["severity=warning", "alertname=PolicyIndexerDeadLetters"], "team-chat,team-tickets"),
    (["severity=info", "alertname=PolicyIndexerFutureDatedDocuments"], "null"),
    (["alertname=SomethingWithoutSeverity"], "team-tickets"),
])
def test_each_severity_reaches_its_receivers(labels: list[str], receivers: str) -> None:
    result = amtool("config", "routes", "test", f"--config.file={PRODUCTION}",
                    f"--verify.receivers={receivers}", *labels)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == receivers


def test_a_wrong_expectation_fails() -> None:
    """The check above can fail: a page expected in the ticket queue is refused."""
    result = amtool("config", "routes", "test", f"--config.file={PRODUCTION}",
                    "--verify.receivers=team-tickets", "severity=critical")
    assert result.returncode != 0


def test_every_severity_of_the_rules_has_a_route_and_no_secret_is_inline() -> None:
    config = yaml.safe_load(PRODUCTION.read_text())
    routed = {m for route in config["route"]["routes"] for m in route["matchers"]}
    for severity in ("critical", "warning", "info"):
        assert any(severity in matcher for matcher in routed), severity
    receivers = [c for r in config["receivers"] for key, cs in r.items() if key != "name"
                 for c in cs]
    for receiver in receivers:
        assert not {"routing_key", "service_key", "api_url", "auth_password"} & set(receiver)
    assert "smtp_auth_password" not in config["global"]
