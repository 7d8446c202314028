"""``policy-indexer monitor``: the freshness monitor as a process, or one cycle of it.

Every ``monitor_interval_seconds`` it lists the configured source and scans the
index, and serves per-document lag, max and p95 lag, documents behind, leftover
versions and the source listing's health on ``/metrics`` (and ``/healthz``:
503 while the last cycle failed).
"""

from __future__ import annotations

from typing import Any

import structlog

from metrics.freshness import FreshnessSnapshot
from metrics.monitor import FreshnessMonitor
from policy_indexer.runtime.backends import open_store
from policy_indexer.runtime.dead_letters import RefusalReader
from policy_indexer.runtime.http import MetricsServer, process_registry
from policy_indexer.runtime.jobs import freshness_monitor, register_freshness
from policy_indexer.runtime.parts import Supervisor, ThreadPart
from policy_indexer.runtime.sources import open_configured_source
from policy_indexer.settings import Settings

log = structlog.get_logger(__name__)


class MonitorCycleFailed(Exception):
    """One cycle could not list the source or read the index; the message says which."""


def _monitor(settings: Settings) -> tuple[FreshnessMonitor, Supervisor]:
    source = open_configured_source(settings)
    store = open_store(settings)
    parts = Supervisor()
    parts.add_stop("index", store.close)
    parts.add_stop("source", source.close)
    # A version the worker refused for its content waits for an edit, not the worker:
    # not a lag (as the embedded `run`'s monitor, which reads its queue's table).
    return freshness_monitor(settings, source, store, RefusalReader(settings)), parts


def monitor_once(settings: Settings) -> FreshnessSnapshot:
    monitor, parts = _monitor(settings)
    with parts:
        snapshot = monitor.run_cycle()
        if snapshot is None:
            raise MonitorCycleFailed(str(monitor.status.last_error))
        return snapshot


def run_monitor(settings: Settings, *, port: int | None = None,
                interval_s: float | None = None) -> None:
    """Until SIGTERM/SIGINT."""
    monitor, parts = _monitor(settings)
    interval = interval_s or settings.monitor_interval_seconds
    registry = process_registry()
    register_freshness(settings, monitor, registry)

    def health() -> dict[str, Any]:
        error = monitor.status.last_error
        return {"status": "ok" if error is None else "failing",
                "last_error": None if error is None else str(error)}

    with parts:
        server = MetricsServer(settings.metrics_host,
                               settings.monitor_metrics_port if port is None else port,
                               registry, health, policy=settings.probe_policy())
        parts.start(server)
        parts.start(ThreadPart("freshness monitor", lambda: monitor.run_forever(interval),
                               monitor.stop))
        log.info("monitor started", source=settings.source_kind, metrics_port=server.port,
                 interval_s=interval)
        parts.run_until_stopped()
