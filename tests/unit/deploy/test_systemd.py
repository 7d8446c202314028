"""The systemd units pass `systemd-analyze verify` (Debian's systemd) with nothing to say,
and each carries the same hardening and a bounded, draining stop.

verify checks that ExecStart's binary exists, and /opt/policy-indexer is not installed on
the CI machine: the test verifies copies whose ExecStart points at this checkout's
policy-indexer instead (the one line it changes), and the worker template as instance 9464.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.deploy_tools import tool

REPO_ROOT = Path(__file__).resolve().parents[3]
UNITS = REPO_ROOT / "deploy" / "systemd"
INSTALLED = "/opt/policy-indexer/bin/policy-indexer"
SERVICES = ["policy-indexer-worker@.service", "policy-indexer-webhook.service",
            "policy-indexer-monitor.service", "policy-indexer-scheduler.service",
            "policy-indexer-embed.service", "policy-indexer-search.service"]
HARDENING = {"NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
             "CapabilityBoundingSet=", "User=policy-indexer", "StateDirectory=policy-indexer",
             "SystemCallFilter=@system-service", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX"}


def local_copies(tmp_path: Path) -> list[Path]:
    """The units as verify can check them here; the worker template as an instance."""
    cli = Path(sys.executable).with_name("policy-indexer")
    assert cli.exists(), cli
    out = []
    for unit in [*SERVICES, "policy-indexer.target"]:
        text = (UNITS / unit).read_text(encoding="utf-8")
        name = unit.replace("@.service", "@9464.service")
        (tmp_path / name).write_text(text.replace(INSTALLED, str(cli)), encoding="utf-8")
        out.append(tmp_path / name)
    return out


def verify(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tool("systemd-analyze")), "verify", "--man=no",
                           *map(str, paths)], capture_output=True, text=True, check=False,
                          timeout=120, cwd=paths[0].parent)


def test_systemd_analyze_verify_finds_nothing(tmp_path: Path) -> None:
    result = verify(local_copies(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout + result.stderr == "", "verify warned: " + result.stdout + result.stderr


def test_verify_speaks_up_about_a_misspelt_key_and_a_missing_binary(tmp_path: Path) -> None:
    """The check above can fail: a typo is a warning (hence the empty-output assertion), a
    binary that is not there an error."""
    monitor = next(p for p in local_copies(tmp_path) if p.name.endswith("monitor.service"))
    monitor.write_text(monitor.read_text().replace("NoNewPrivileges=", "NoNewPrivilege="))
    assert "Unknown key 'NoNewPrivilege'" in verify([monitor]).stderr
    monitor.write_text(re.sub(r"^ExecStart=\S+", "ExecStart=/nonexistent/policy-indexer",
                              monitor.read_text(), flags=re.MULTILINE))
    result = verify([monitor])
    assert result.returncode != 0 and "/nonexistent/policy-indexer" in result.stderr


@pytest.mark.parametrize("unit", SERVICES)
def test_every_unit_is_hardened_and_stops_within_a_bound(unit: str) -> None:
    lines = set((UNITS / unit).read_text(encoding="utf-8").splitlines())
    assert lines >= HARDENING, sorted(HARDENING - lines)
    assert {"KillSignal=SIGTERM", "TimeoutStopSec=30", "Restart=on-failure",
            "PartOf=policy-indexer.target", "WantedBy=policy-indexer.target"} <= lines
    assert f"ExecStart={INSTALLED} " + {"policy-indexer-worker@.service": "run",
                                       "policy-indexer-search.service": "serve"}.get(
        unit, unit.removeprefix("policy-indexer-").removesuffix(".service")) in lines
    assert "EnvironmentFile=/etc/policy-indexer/policy-indexer.env" in lines


def test_worker_instances_each_get_their_own_metrics_port() -> None:
    text = (UNITS / "policy-indexer-worker@.service").read_text(encoding="utf-8")
    assert "Environment=POLICY_INDEXER_METRICS_PORT=%i" in text
    assert "Environment=POLICY_INDEXER_WORKER_PROCESSES=1" in text
