"""Start a service in the background with a pid file; stop only what that pid file names."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


def read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def alive(pid: int, marker: str) -> bool:
    """The process exists and its command line still contains ``marker`` (no recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    zombie = stat.rsplit(")", 1)[-1].split()[0] == "Z"
    return marker in cmdline and not zombie


def exited(pid: int) -> bool:
    """For a child we just started: has it exited? (Reaps it if so.)"""
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return not Path(f"/proc/{pid}").exists()
    return done == pid


def start(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    log_file: Path,
    pid_file: Path,
    user: str | None = None,
) -> int:
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as log:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            user=user,
            group=user,
            extra_groups=[] if user else None,
        )
    pid_file.write_text(f"{proc.pid}\n")
    return proc.pid


def stop(pid_file: Path, marker: str, timeout: float = 40.0) -> bool:
    """SIGTERM the process group named by ``pid_file``, SIGKILL after ``timeout``.

    Returns True if a process was stopped. The pid file is removed either way.
    """
    pid = read_pid(pid_file)
    stopped = False
    if pid is not None and alive(pid, marker):
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while alive(pid, marker) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.2)
        if alive(pid, marker):
            _signal_group(pid, signal.SIGKILL)
            while alive(pid, marker):
                _reap(pid)
                time.sleep(0.1)
        stopped = True
    pid_file.unlink(missing_ok=True)
    return stopped


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, sig)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
