"""deploy/local/services: `up` twice is harmless, `down` leaves nothing behind, ports are checked.

These start their own Prometheus and Kafka on free ports with their own state
folder, so the shared services other tests use are never touched.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from devservices import health, process

pytestmark = [pytest.mark.services, pytest.mark.slow]
RUNNER = Path(__file__).resolve().parents[2] / "deploy" / "local" / "services"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RUNNER), *args], env={**os.environ, **env}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip


@pytest.fixture
def private_env(tmp_path: Path) -> dict[str, str]:
    return {
        "POLICY_INDEXER_LOCAL_STATE": str(tmp_path / "state"),
        "POLICY_INDEXER_LOCAL_PROMETHEUS_PORT": str(free_port()),
        "POLICY_INDEXER_LOCAL_KAFKA_PORT": str(free_port()),
        "POLICY_INDEXER_LOCAL_KAFKA_CONTROLLER_PORT": str(free_port()),
    }


@pytest.mark.parametrize(
    ("name", "port_key", "marker"),
    [
        ("prometheus", "POLICY_INDEXER_LOCAL_PROMETHEUS_PORT", "prometheus"),
        ("kafka", "POLICY_INDEXER_LOCAL_KAFKA_PORT", "kafka.Kafka"),
    ],
)
def test_up_twice_is_harmless_and_down_leaves_no_process(
    private_env: dict[str, str], name: str, port_key: str, marker: str
) -> None:
    port = int(private_env[port_key])
    pid_file = Path(private_env["POLICY_INDEXER_LOCAL_STATE"]) / name / f"{name}.pid"
    try:
        first = run(private_env, "up", name)
        assert first.returncode == 0, first.stdout + first.stderr
        pid = process.read_pid(pid_file)
        assert pid is not None and process.alive(pid, marker)

        second = run(private_env, "up", name)
        assert second.returncode == 0, second.stdout + second.stderr
        assert "already running" in second.stdout
        assert process.read_pid(pid_file) == pid

        status = run(private_env, "status")
        assert f"healthy (pid {pid})" in status.stdout
    finally:
        down = run(private_env, "down", name)
    assert down.returncode == 0, down.stdout + down.stderr
    assert not process.alive(pid, marker)
    assert not pid_file.exists()
    assert not health.port_open("127.0.0.1", port)
    assert "not running" in run(private_env, "down", name).stdout


def test_a_port_taken_by_another_process_is_a_clear_error(private_env: dict[str, str]) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        result = run(
            {**private_env, "POLICY_INDEXER_LOCAL_PROMETHEUS_PORT": str(port)}, "up", "prometheus"
        )
    assert result.returncode == 1
    assert f"port 127.0.0.1:{port} is already taken" in result.stderr
    assert "POLICY_INDEXER_LOCAL_PROMETHEUS_PORT" in result.stderr


def test_an_unknown_service_name_is_refused(private_env: dict[str, str]) -> None:
    result = run(private_env, "up", "zookeeper")
    assert result.returncode == 2
    assert "unknown service zookeeper" in result.stderr
