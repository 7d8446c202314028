"""``policy-indexer monitor``: the freshness monitor as a process, or one cycle of it.

Every ``monitor_interval_seconds`` it lists the configured source and scans the
index, and serves per-document lag, max and p95 lag, documents behind, leftover
versions and the source listing's health on ``/metrics`` (and ``/healthz``:
503 while the last cycle failed). The embedded ``run`` runs the same part
(``monitor_part``), its first cycle after the first indexing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from metrics.freshness import FreshnessSnapshot
from metrics.monitor import FreshnessMonitor
from policy_indexer.runtime.backends import Backends, open_backends
from policy_indexer.runtime.dead_letters import RefusalReader
from policy_indexer.runtime.http import process_registry
from policy_indexer.runtime.jobs import freshness_monitor, register_freshness, source_and_index
from policy_indexer.runtime.parts import Supervisor, ThreadPart
from policy_indexer.runtime.runner import ProbeServer, Running, run_parts
from policy_indexer.runtime.sources import open_configured_source
from policy_indexer.settings import Settings

log = structlog.get_logger(__name__)

STOP_TIMEOUT_S = 10.0


class MonitorCycleFailed(Exception):
    """One cycle could not list the source or read the index; the message says which."""


class MonitorPart(ThreadPart):
    """The monitor's cycles in a thread; ``monitor`` is its state (``/healthz`` reads it)."""

    def __init__(self, monitor: FreshnessMonitor, run: Callable[[], None],
                 close: Callable[[], None]) -> None:
        super().__init__("freshness monitor", run, monitor.stop, stop_timeout_s=STOP_TIMEOUT_S,
                         after_stop=close)
        self.monitor = monitor

    def health(self) -> dict[str, Any]:
        error = self.monitor.status.last_error
        return {"status": "ok" if error is None else "failing",
                "last_error": None if error is None else str(error)}


def monitor_part(settings: Settings, backends: Backends, registry: CollectorRegistry, *,
                 interval_s: float | None = None,
                 first_indexed: threading.Event | None = None) -> MonitorPart:
    """The freshness monitor as a part, its gauges in ``registry``.

    It has its own source object and its own connection to the index. A version the
    worker refused for its content waits for an edit, not the worker: not a lag (the
    refusals are read from the mode's dead letters). ``first_indexed``: the first cycle
    waits for it (at most ``monitor_first_cycle_wait_seconds``): before the first
    indexing every document would read as missing with the age of its file as lag.
    """
    source, store, close = source_and_index(settings, backends)
    monitor = freshness_monitor(settings, source, store, RefusalReader(backends))
    register_freshness(settings, monitor, registry)
    interval = interval_s or settings.monitor_interval_seconds
    wait_s = settings.monitor_first_cycle_wait_seconds

    def run() -> None:
        monitor.run_forever(interval, start_when=first_indexed,
                            start_within_s=wait_s if first_indexed is not None else None)

    return MonitorPart(monitor, run, close)


def monitor_once(settings: Settings) -> FreshnessSnapshot:
    source = open_configured_source(settings)
    backends = open_backends(settings)
    with Supervisor() as parts:
        parts.add_stop("index", backends.close)
        parts.add_stop("source", source.close)
        monitor = freshness_monitor(settings, source, backends.store,
                                    RefusalReader(backends))
        snapshot = monitor.run_cycle()
        if snapshot is None:
            raise MonitorCycleFailed(str(monitor.status.last_error))
        return snapshot


def run_monitor(settings: Settings, *, port: int | None = None,
                interval_s: float | None = None) -> None:
    """Until SIGTERM/SIGINT."""
    interval = interval_s or settings.monitor_interval_seconds
    parts: list[MonitorPart] = []  # /healthz: the last cycle's error, once it runs

    def health() -> dict[str, Any]:
        return parts[0].health() if parts else {"status": "ok", "last_error": None}

    def part(settings: Settings, backends: Backends, registry: CollectorRegistry) -> MonitorPart:
        parts.append(monitor_part(settings, backends, registry, interval_s=interval))
        return parts[0]

    def started(running: Running) -> None:
        assert running.server is not None
        log.info("monitor started", source=settings.source_kind,
                 metrics_port=running.server.port, interval_s=interval)

    port = settings.monitor_metrics_port if port is None else port
    run_parts(settings, [part], registry=process_registry(),
              probes=ProbeServer(port, "POLICY_INDEXER_MONITOR_METRICS_PORT", health),
              on_started=started)
