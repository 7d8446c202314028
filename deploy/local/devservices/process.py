"""Start a service in the background with a pid file; find and stop what the runner started.

A pid file can name a process that is not the one serving the port: two
runners that start one service at once both write it, and the loser, which
exits because the port is taken, is the one named last. ``listener`` finds the
process that really listens on a port (``/proc/net/tcp``), so ``down`` and ``up``
can act on it when its command line shows the runner started it.
"""

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
    line = cmdline(pid)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    zombie = stat.rsplit(")", 1)[-1].split()[0] == "Z"
    return bool(line) and marker in line and not zombie


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
    stopped = pid is not None and stop_group(pid, marker, timeout)
    pid_file.unlink(missing_ok=True)
    return stopped


def stop_group(leader: int, marker: str, timeout: float = 40.0, *, also: int | None = None) -> bool:
    """SIGTERM the process group of ``leader``, SIGKILL after ``timeout``.

    Waits until ``leader`` (and ``also``, a member such as the child that
    listens) no longer runs with ``marker`` in its command line. Returns True
    if one of them was running.
    """
    watched = [p for p in (leader, also) if p is not None]

    def running() -> bool:
        return any(alive(p, marker) for p in watched)

    if not running():
        return False
    _signal_group(leader, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while running() and time.monotonic() < deadline:
        for p in watched:
            _reap(p)
        time.sleep(0.2)
    if running():
        _signal_group(leader, signal.SIGKILL)
        for p in watched:
            if p != leader and alive(p, marker):
                _kill(p)
        while running():
            for p in watched:
                _reap(p)
            time.sleep(0.1)
    return True


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


_LISTEN = "0A"


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes in the LISTEN state on ``port`` (any address, IPv4 or IPv6)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
                inodes.add(inode)
    return inodes


def listener(port: int) -> int | None:
    """The pid of a process holding a listening TCP socket on ``port``, if one is found."""
    inodes = _listening_inodes(port)
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fds = list((proc / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in wanted:
                    return int(proc.name)
            except OSError:
                continue
    return None


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, sig)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
