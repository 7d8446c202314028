"""up / down / status / logs over the services of ``devservices.services``."""

from __future__ import annotations

import time
from pathlib import Path

from devservices import health, process
from devservices.config import Config
from devservices.services import SERVICES, Service, ServiceError

__all__ = ["Runner", "ServiceError"]


class Runner:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg

    def _pid_file(self, name: str) -> Path:
        return self.cfg.state_dir / name / f"{name}.pid"

    def _log_file(self, name: str) -> Path:
        return self.cfg.state_dir / name / f"{name}.log"

    def _running_pid(self, service: Service) -> int | None:
        pid = process.read_pid(self._pid_file(service.name))
        return pid if pid is not None and process.alive(pid, service.marker) else None

    def up(self, names: list[str]) -> None:
        for name in names:
            self._up_one(SERVICES[name])

    def _up_one(self, service: Service) -> None:
        cfg, name = self.cfg, service.name
        port = cfg.port_of(name)
        pid = self._running_pid(service)
        if pid is not None:
            if service.ready(cfg):
                print(f"{name}: already running (pid {pid}) on {cfg.host}:{port}")
                return
            print(f"{name}: started earlier (pid {pid}), waiting until healthy")
            self._wait(service, pid, started_here=False)
            print(f"{name}: ready on {cfg.host}:{port}", flush=True)
            return
        else:
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
        self._wait(service, pid, started_here=True)
        print(f"{name}: ready on {cfg.host}:{port}", flush=True)

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
        for name in names:
            service = SERVICES[name]
            stopped = process.stop(self._pid_file(name), service.marker)
            print(f"{name}: {'stopped' if stopped else 'not running'}")

    def status(self) -> int:
        """Print one line per service; return 0 when every service is up and healthy."""
        worst = 0
        for name, service in SERVICES.items():
            pid = self._running_pid(service)
            if pid is None:
                state, worst = "stopped", 1
            elif service.ready(self.cfg):
                state = f"healthy (pid {pid})"
            else:
                state, worst = f"running, not healthy (pid {pid})", 1
            print(f"{name:14} {self.cfg.host}:{self.cfg.port_of(name):<6} {state}")
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
