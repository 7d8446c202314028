"""deploy/local/services down stops every service its up started, and up works after it.

CI once left Alertmanager listening after `down` printed "alertmanager: not
running", and the next `up` refused the taken port: the pid file named a process
that was not the one listening (two runners started it at once; the loser, which
exited on the taken port, wrote the pid file last). These run their own
Prometheus and Alertmanager on free ports in a state folder of their own, so the
shared services on the default ports are never touched.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from devservices import health, process
from support.workers import free_port

pytestmark = [pytest.mark.services, pytest.mark.slow]
RUNNER = Path(__file__).resolve().parents[2] / "deploy" / "local" / "services"
NAMES = ("alertmanager", "prometheus")


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(RUNNER), *args], env={**os.environ, **env}, capture_output=True, text=True,
        timeout=180, check=False,
    )  # fmt: skip


def started_from(state: Path, name: str) -> list[int]:
    """Pids whose command line names ``state/name/``: what a runner there started."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and f"{state / name}/" in process.cmdline(int(proc.name)):
            found.append(int(proc.name))
    return found


@pytest.fixture
def private(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {
        "POLICY_INDEXER_LOCAL_STATE": str(tmp_path / "state"),
        "POLICY_INDEXER_LOCAL_PROMETHEUS_PORT": str(free_port()),
        "POLICY_INDEXER_LOCAL_ALERTMANAGER_PORT": str(free_port()),
    }
    yield env
    run(env, "down", *NAMES)  # whatever a failed assertion left running


def port(env: dict[str, str], name: str) -> int:
    return int(env[f"POLICY_INDEXER_LOCAL_{name.upper()}_PORT"])


def assert_all_down(env: dict[str, str]) -> None:
    state = Path(env["POLICY_INDEXER_LOCAL_STATE"])
    for name in NAMES:
        assert not health.port_open("127.0.0.1", port(env, name)), f"{name} still listens"
        assert started_from(state, name) == [], f"{name} still runs"


def test_up_down_up(private: dict[str, str]) -> None:
    for _ in range(2):
        up = run(private, "up", *NAMES)
        assert up.returncode == 0, up.stdout + up.stderr
        for name in NAMES:
            assert f"{name}: ready" in up.stdout
        down = run(private, "down", *NAMES)
        assert down.returncode == 0, down.stdout + down.stderr
        assert "not running" not in down.stdout
        assert_all_down(private)


@pytest.mark.parametrize("pid_file_names", ["an exited process", "nothing"])
def test_down_stops_the_listener_a_stale_pid_file_lost(
    private: dict[str, str], pid_file_names: str
) -> None:
    state = Path(private["POLICY_INDEXER_LOCAL_STATE"])
    up = run(private, "up", "alertmanager")
    assert up.returncode == 0, up.stdout + up.stderr
    serving = started_from(state, "alertmanager")
    assert len(serving) == 1
    pid_file = state / "alertmanager" / "alertmanager.pid"
    if pid_file_names == "nothing":
        pid_file.unlink()
    else:  # what the runner that lost the race wrote: a pid that exited on the taken port
        loser = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True,
                               check=True)  # fmt: skip
        pid_file.write_text(loser.stdout)

    down = run(private, "down", "alertmanager")
    assert down.returncode == 0, down.stdout + down.stderr
    assert f"alertmanager: stopped (pid {serving[0]}, listening on" in down.stdout
    assert_all_down(private)

    again = run(private, "up", "alertmanager")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "alertmanager: ready" in again.stdout


def test_up_adopts_its_own_listener_when_the_pid_file_is_gone(private: dict[str, str]) -> None:
    state = Path(private["POLICY_INDEXER_LOCAL_STATE"])
    assert run(private, "up", "alertmanager").returncode == 0
    serving = started_from(state, "alertmanager")
    (state / "alertmanager" / "alertmanager.pid").unlink()
    again = run(private, "up", "alertmanager")
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"already running (pid {serving[0]}" in again.stdout
    assert started_from(state, "alertmanager") == serving
    assert "stopped (pid" in run(private, "down", "alertmanager").stdout
    assert_all_down(private)


def test_concurrent_ups_start_one_alertmanager(private: dict[str, str]) -> None:
    state = Path(private["POLICY_INDEXER_LOCAL_STATE"])
    ups = [
        subprocess.Popen([str(RUNNER), "up", "alertmanager"], env={**os.environ, **private},
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(3)
    ]  # fmt: skip
    outputs = [p.communicate(timeout=120)[0] for p in ups]
    assert [p.returncode for p in ups] == [0, 0, 0], outputs
    assert len(started_from(state, "alertmanager")) == 1, outputs
    down = run(private, "down", "alertmanager")
    assert down.returncode == 0, down.stdout + down.stderr
    assert_all_down(private)


def test_down_leaves_a_process_it_did_not_start_alone(private: dict[str, str]) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port(private, "alertmanager")))
        squatter.listen()
        down = run(private, "down", "alertmanager")
        assert down.returncode == 0, down.stdout + down.stderr
        assert "alertmanager: not running" in down.stdout
        assert f"is held by pid {os.getpid()}" in down.stderr
        assert "left alone" in down.stderr
        assert health.port_open("127.0.0.1", port(private, "alertmanager"))
        status = run(private, "status")
        assert f"port held by pid {os.getpid()} (not started here)" in status.stdout
