"""The local Prometheus is real: it scrapes a prometheus-client endpoint; our configs are valid."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from devservices.config import Config
from devservices.services import prometheus_config_text
from prometheus_client import CollectorRegistry, Gauge, start_http_server
from support.waiting import wait_until

pytestmark = pytest.mark.services
REPO_ROOT = Path(__file__).resolve().parents[2]


def query(prometheus_url: str, promql: str) -> list[dict[str, object]]:
    url = f"{prometheus_url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
    with urllib.request.urlopen(url, timeout=5) as resp:
        body = json.loads(resp.read())
    assert body["status"] == "success", body
    result: list[dict[str, object]] = body["data"]["result"]
    return result


def test_prometheus_scrapes_a_metrics_endpoint(
    prometheus_url: str, prometheus_targets_dir: Path, unique: str
) -> None:
    registry = CollectorRegistry()
    Gauge("policy_indexer_selftest_value", "A value only this test sets.", registry=registry).set(
        42
    )
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    port = server.server_address[1]
    target_file = prometheus_targets_dir / f"{unique}.json"
    target_file.write_text(
        json.dumps([{"targets": [f"127.0.0.1:{port}"], "labels": {"test": unique}}])
    )
    try:
        wait_until(lambda: query(prometheus_url, f'up{{test="{unique}"}}'), 45,
                   "Prometheus to scrape the test's target as up", every_s=1,
                   accept=lambda up: up and up[0]["value"][1] == "1")  # type: ignore[index]
        value = query(prometheus_url, f'policy_indexer_selftest_value{{test="{unique}"}}')
        assert value[0]["value"][1] == "42", value  # type: ignore[index]
    finally:
        target_file.unlink()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.mark.parametrize("which", ["deployment", "local"])
def test_promtool_accepts_our_prometheus_configs(
    which: str, services: Config, tmp_path: Path
) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: scripts/install installs the Debian package prometheus"
    if which == "deployment":
        config = REPO_ROOT / "deploy" / "prometheus" / "prometheus.yml"
    else:
        config = tmp_path / "prometheus.yml"
        config.write_text(prometheus_config_text(services))
    result = subprocess.run(
        [promtool, "check", "config", str(config)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout
