"""up / down / status / logs over the services of ``devservices.services``."""

from __future__ import annotations

import contextlib
import fcntl
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from devservices import health, process
from devservices.config import Config
from devservices.services import SERVICES, Service, ServiceError

__all__ = ["Runner", "ServiceError"]


class Runner:
    """``services`` and ``port_of`` default to the single-node services of ``cfg``; the
    replicated cluster (``devservices.cluster``) passes its own nodes and ports."""

    def __init__(
        self,
        cfg: Config,
        services: Mapping[str, Service] | None = None,
        port_of: Callable[[str], int] | None = None,
    ) -> None:
        self.cfg = cfg
        self.services = dict(SERVICES if services is None else services)
        self.port_of = cfg.port_of if port_of is None else port_of

    def _pid_file(self, name: str) -> Path:
        return self.cfg.state_dir / name / f"{name}.pid"

    def _log_file(self, name: str) -> Path:
        return self.cfg.state_dir / name / f"{name}.log"

    def _running_pid(self, service: Service) -> int | None:
        pid = process.read_pid(self._pid_file(service.name))
        return pid if pid is not None and process.alive(pid, service.marker) else None

    def _owned(self, pid: int, service: Service) -> bool:
        """``pid`` runs ``service`` from this state folder: a runner with this config started it.

        Every launch names its own folder (``<state>/<name>/...``) on its command line.
        """
        line = process.cmdline(pid)
        return service.marker in line and f"{self.cfg.state_dir / service.name}/" in line

    def _listener(self, service: Service) -> tuple[int, bool] | None:
        """The process listening on the service's port, and whether it is ours."""
        pid = process.listener(self.port_of(service.name))
        return None if pid is None else (pid, self._owned(pid, service))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """One ``up``/``down`` at a time per state folder.

        Two at once both found no pid file and a free port, both started the
        service, and the pid file named the one that lost the port and exited:
        ``down`` then said "not running" while the winner went on listening.
        """
        self.cfg.state_dir.mkdir(parents=True, exist_ok=True)
        with (self.cfg.state_dir / ".runner.lock").open("a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"services: another runner is starting or stopping services in "
                      f"{self.cfg.state_dir}; waiting for it", flush=True)
                fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def up(self, names: list[str], *, together: bool = False) -> None:
        """Start each service and wait until it is healthy, one after the other; with
        ``together``, start them all first and then wait for each (the nodes of a quorum
        are healthy only once a majority of them runs)."""
        with self._locked():
            if not together:
                for name in names:
                    self._up_one(self.services[name])
                return
            pending = [(self.services[n], self._start_one(self.services[n])) for n in names]
            for service, started in pending:
                if started is not None:
                    self._finish_one(service, *started)

    def _up_one(self, service: Service) -> None:
        started = self._start_one(service)
        if started is not None:
            self._finish_one(service, *started)

    def _finish_one(self, service: Service, pid: int, started_here: bool) -> None:
        self._wait(service, pid, started_here=started_here)
        if started_here:
            self._check_listener_is(service, pid)
        print(f"{service.name}: ready on {self.cfg.host}:{self.port_of(service.name)}",
              flush=True)

    def _start_one(self, service: Service) -> tuple[int, bool] | None:
        """Start ``service`` unless it runs; (pid, started here) to wait for, or None when it
        is already healthy."""
        cfg, name = self.cfg, service.name
        port = self.port_of(name)
        pid = self._running_pid(service)
        if pid is not None:
            if service.ready(cfg):
                print(f"{name}: already running (pid {pid}) on {cfg.host}:{port}")
                return None
            print(f"{name}: started earlier (pid {pid}), waiting until healthy")
            return pid, False
        found = self._listener(service)
        if found is not None and found[1]:
            # Ours (started from this state folder) though the pid file lost it: adopt it.
            leader = process.group_of(found[0]) or found[0]
            self._pid_file(name).write_text(f"{leader}\n")
            print(f"{name}: already running (pid {leader}, the pid file named another; "
                  f"adopted) on {cfg.host}:{port}")
            return leader, False
        if health.port_open(cfg.host, port):
            raise ServiceError(
                f"{name}: port {cfg.host}:{port} is already taken by a process this "
                f"runner did not start; stop it or choose another port "
                f"(POLICY_INDEXER_LOCAL_{_env_name(name)}_PORT)"
            )
        print(f"{name}: preparing (cached downloads in {cfg.cache_dir})", flush=True)
        launch = service.prepare(cfg)
        pid = process.start(
            launch.argv,
            env=launch.env,
            cwd=launch.cwd,
            log_file=self._log_file(name),
            pid_file=self._pid_file(name),
            user=launch.user,
        )
        print(f"{name}: started (pid {pid}), waiting until healthy", flush=True)
        return pid, True

    def _check_listener_is(self, service: Service, pid: int) -> None:
        """The healthy answer came from the process just started, not another on the port."""
        found = self._listener(service)
        if found is None or process.group_of(found[0]) == pid:
            return  # not visible in /proc (another namespace), or ours: nothing to say
        holder = found[0]
        process.stop(self._pid_file(service.name), service.marker)
        raise ServiceError(
            f"{service.name}: port {self.cfg.host}:{self.port_of(service.name)} was taken "
            f"by pid {holder} ({process.cmdline(holder)[:200]}) while pid {pid} started; "
            f"stopped pid {pid}"
        )

    def _wait(self, service: Service, pid: int, *, started_here: bool) -> None:
        deadline = time.monotonic() + service.start_timeout
        while time.monotonic() < deadline:
            if service.ready(self.cfg):
                return
            gone = process.exited(pid) if started_here else not process.alive(pid, service.marker)
            if gone:
                raise ServiceError(
                    f"{service.name} exited before becoming healthy. Log tail "
                    f"({self._log_file(service.name)}):\n{self.log_tail(service.name, 40)}"
                )
            time.sleep(0.5)
        raise ServiceError(
            f"{service.name} not healthy after {service.start_timeout:.0f}s (still running as "
            f"pid {pid}). Log tail ({self._log_file(service.name)}):\n"
            f"{self.log_tail(service.name, 40)}"
        )

    def down(self, names: list[str]) -> None:
        with self._locked():
            for name in names:
                self._down_one(self.services[name])

    def _down_one(self, service: Service) -> None:
        """Stop what the pid file names, then any process of ours still on the port."""
        name, cfg = service.name, self.cfg
        named = process.read_pid(self._pid_file(name))
        stopped = process.stop(self._pid_file(name), service.marker)
        if stopped:
            print(f"{name}: stopped (pid {named})")
        for _ in range(5):  # a lost race can leave more than one; each round stops one
            found = self._listener(service)
            if found is None:
                break
            pid, ours = found
            if not ours:
                print(
                    f"{name}: {cfg.host}:{self.port_of(name)} is held by pid {pid} "
                    f"({process.cmdline(pid)[:200]}), which was not started from "
                    f"{cfg.state_dir}: left alone",
                    file=sys.stderr,
                )
                break
            leader = process.group_of(pid) or pid
            process.stop_group(leader, service.marker, also=pid)
            stopped = True
            print(f"{name}: stopped (pid {leader}, listening on {cfg.host}:{self.port_of(name)}; "
                  f"the pid file named {named if named is not None else 'none'})")
        if not stopped:
            print(f"{name}: not running")

    def status(self) -> int:
        """Print one line per service; return 0 when every service is up and healthy."""
        worst = 0
        for name, service in self.services.items():
            pid = self._running_pid(service)
            found = self._listener(service) if pid is None else None
            if found is not None:
                owner = "started from this state folder" if found[1] else "not started here"
                state, worst = f"stopped; port held by pid {found[0]} ({owner})", 1
            elif pid is None:
                state, worst = "stopped", 1
            elif service.ready(self.cfg):
                state = f"healthy (pid {pid})"
            else:
                state, worst = f"running, not healthy (pid {pid})", 1
            print(f"{name:14} {self.cfg.host}:{self.port_of(name):<6} {state}")
        print(f"state: {self.cfg.state_dir}  cache: {self.cfg.cache_dir}")
        return worst

    def log_tail(self, name: str, lines: int) -> str:
        log = self._log_file(name)
        if not log.exists():
            return f"(no log yet at {log})"
        with log.open("rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - 256 * 1024))
            text = fh.read().decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])


def _env_name(name: str) -> str:
    return {"elasticsearch": "ES"}.get(name, name.upper())
