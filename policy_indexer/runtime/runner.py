"""The one runner of every long-running process: its parts, its probes, its signals.

A process is a list of part kinds, each a function of ``(settings, backends,
registry)`` that builds one ``Part`` (or ``None``: off in these settings). The
runner opens the mode's backends, serves ``/metrics``, ``/healthz`` and
``/readyz`` once (``ProbeServer``; none where the part serves them itself, as
the webhook receiver does), builds every part, then starts them in order under
one ``Supervisor`` (the probe server first: once it answers, every part is built
and starting), and runs until SIGTERM or SIGINT; then the parts stop in reverse
order of start, the backends last::

    run_parts(settings, [webhook_part], registry=registry, probes=None)   # one part
    run_parts(settings, [worker, webhook, ..., scheduler], ...)           # the embedded run

A SIGTERM while the parts start (the probes already answer) stops them too.
``ready``: a check of the backends retried until it passes (``until_ready``),
with the probe server already answering, alive and not ready (``starting``),
for processes that must wait for Kafka or Elasticsearch instead of exiting.

Raises ``PartError`` (a part or the probe server could not start) and
``PartDied`` (a required part ended).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Protocol

import structlog
from prometheus_client import CollectorRegistry

from policy_indexer.runtime.backends import Backends, open_backends
from policy_indexer.runtime.http import MetricsServer
from policy_indexer.runtime.parts import Part, PartError, Supervisor, stop_on_signals
from policy_indexer.runtime.probes import Health, Heartbeat, no_heartbeat
from policy_indexer.runtime.startup import StartingState, until_ready
from policy_indexer.settings import Settings

log = structlog.get_logger(__name__)

PartKind = Callable[[Settings, Backends, CollectorRegistry], Part | None]
"""A part's one definition: what it needs from the process, the part it makes (or None)."""


class Starting(StartingState, Protocol):
    """A process's start-up state: ``starting`` until its dependencies answered."""

    starting: bool


def _always_ok() -> dict[str, object]:
    return {"status": "ok"}


@dataclass(frozen=True)
class ProbeServer:
    """Where the process serves ``/metrics`` and its probes, and what they answer."""

    port: int
    setting: str  # the environment name of the port, for the error when it is taken
    health: Health = _always_ok
    heartbeat: Heartbeat = no_heartbeat


@dataclass(frozen=True)
class Readiness:
    """What to retry before the parts are built, and where the tries are reported."""

    check: Callable[[Backends], None]
    what: str
    state: Starting


def open_probe_server(settings: Settings, probes: ProbeServer,
                      registry: CollectorRegistry) -> MetricsServer:
    """The process's one ``/metrics`` + probes server, bound now (``PartError`` if taken)."""
    try:
        return MetricsServer(settings.metrics_host, probes.port, registry, probes.health,
                             policy=settings.probe_policy(), heartbeat=probes.heartbeat)
    except OSError as exc:
        raise PartError(f"/metrics cannot listen on {settings.metrics_host}:{probes.port} "
                        f"({probes.setting}): {exc}") from exc


@dataclass
class Running:
    """What ``on_started`` is told: the backends, the probe server and the started parts."""

    backends: Backends
    server: MetricsServer | None
    parts: list[Part]

    def part(self, name: str) -> Part | None:
        """The started part of that name (None: off in these settings)."""
        return next((part for part in self.parts if part.name == name), None)


def run_parts(
    settings: Settings,
    kinds: Sequence[PartKind],
    *,
    registry: CollectorRegistry,
    probes: ProbeServer | None,
    backends: Backends | None = None,
    ready: Readiness | None = None,
    on_started: Callable[[Running], None] = lambda _running: None,
) -> None:
    """Run ``kinds`` as one process until SIGTERM/SIGINT (see the module docstring).

    ``backends``: already opened by the caller (it closes them); else the mode's,
    opened here and closed after the parts stop.
    """
    with Supervisor() as supervisor, stop_on_signals(supervisor.request_stop):
        server = None
        if probes is not None:
            server = open_probe_server(settings, probes, registry)
            if ready is not None:  # alive and not ready while it waits for its dependencies
                supervisor.start(server)
        opened = _open(settings, supervisor, backends, ready)
        if opened is None:
            return  # stopped before the dependencies answered
        with ExitStack() as unstarted:  # the probe server, if the build fails or is stopped
            if server is not None and ready is None:
                unstarted.callback(server.stop)
            built = _build(settings, kinds, opened, registry, supervisor)
            if built is None:
                return
            unstarted.pop_all()
        if server is not None and ready is None:
            supervisor.start(server)  # it answers once every part is built, as they start
        _start_all(supervisor, built)
        if ready is not None:
            ready.state.starting = False
        on_started(Running(opened, server, built))
        supervisor.run_until_stopped()


def _build(settings: Settings, kinds: Sequence[PartKind], backends: Backends,
           registry: CollectorRegistry, supervisor: Supervisor) -> list[Part] | None:
    """Every part, built in order (nothing started); a failure, or a stop asked meanwhile,
    stops what was built. None: stopped."""
    built: list[Part] = []
    with ExitStack() as undo:
        for kind in kinds:
            if supervisor.stop_requested.is_set():
                return None
            part = kind(settings, backends, registry)
            if part is not None:
                built.append(part)
                undo.callback(part.stop)
        undo.pop_all()
    return built


def _start_all(supervisor: Supervisor, built: list[Part]) -> None:
    """Start in order; if one fails, the ones not started are stopped too (the started
    ones stop with the supervisor)."""
    for n, part in enumerate(built):
        try:
            supervisor.start(part, required=getattr(part, "required", True))
        except BaseException:
            for rest in reversed(built[n + 1:]):
                rest.stop()
            raise


def _open(settings: Settings, supervisor: Supervisor, backends: Backends | None,
          ready: Readiness | None) -> Backends | None:
    if backends is not None:
        return backends

    def open_ready() -> Backends:
        with ExitStack() as undo:  # closes what was opened if the check fails
            opened = open_backends(settings)
            undo.callback(opened.close)
            if ready is not None:
                ready.check(opened)
            undo.pop_all()
            return opened

    if ready is None:
        opened: Backends | None = open_ready()
    else:
        opened = until_ready(open_ready, what=ready.what, state=ready.state,
                             stop=supervisor.stop_requested, policy=settings.retry_policy())
    if opened is not None:
        supervisor.add_stop("backends", opened.close)
    return opened
