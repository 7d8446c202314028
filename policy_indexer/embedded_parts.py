"""The parts ``run_embedded`` starts beside the queue worker, each with ``stop()``.

- the webhook receiver (uvicorn in a thread), publishing into the local queue;
- the freshness monitor (a thread cycling every ``monitor_interval_seconds``);
- the scheduler (the nightly reconcile and the hourly sweep, SQLite lease).

All of them register their metrics in the one registry ``run_embedded`` serves
on ``/metrics``. The monitor and the scheduler each get their own connection
to the index file (SQLite in WAL mode lets them read while the worker writes)
and their own source object.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from datetime import timedelta

import structlog
import uvicorn
from apscheduler.schedulers.base import BaseScheduler
from prometheus_client import CollectorRegistry

from metrics.collector import FreshnessCollector
from metrics.definitions import ReindexMetrics
from metrics.monitor import FreshnessMonitor
from policy_indexer import __version__
from policy_indexer.commands.reindex import open_runner
from policy_indexer.commands.scheduler import scheduler_for
from policy_indexer.commands.webhook import build_config
from policy_indexer.embedded import index_path
from policy_indexer.settings import Settings
from policy_indexer.sources import open_configured_source
from reindex.jobs import JobRunner
from sources.base import Source
from store.sqlite import SQLiteStore
from transport.publisher import EventPublisher
from webhooks.app import create_app
from webhooks.serve import server_config

log = structlog.get_logger(__name__)

STOP_TIMEOUT_S = 10.0


class PartError(Exception):
    """A part could not start; the message says which and why."""


class WebhookThread:
    """The receiver on ``webhook_host:webhook_port`` in a thread (uvicorn, own event loop)."""

    def __init__(self, settings: Settings, publisher: EventPublisher,
                 registry: CollectorRegistry) -> None:
        app = create_app(build_config(settings), publisher, registry)
        host, port = settings.webhook_host, settings.webhook_port
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._socket.bind((host, port))
        except OSError as exc:
            self._socket.close()
            raise PartError(f"webhook receiver cannot listen on {host}:{port} "
                            f"(POLICY_INDEXER_WEBHOOK_PORT): {exc}") from exc
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self._server = uvicorn.Server(server_config(app, host, self.port))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]},
            name="webhook-receiver", daemon=True,
        )

    def start(self, timeout_s: float = 10.0) -> WebhookThread:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
        if not self._server.started:
            self.stop()
            raise PartError(f"webhook receiver did not start on {self.url}")
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(STOP_TIMEOUT_S)
        self._socket.close()


class MonitorThread:
    """The freshness monitor over the source and the index file, in a thread."""

    def __init__(self, settings: Settings, registry: CollectorRegistry) -> None:
        self._source: Source = open_configured_source(settings)
        self._store = SQLiteStore(index_path(settings))
        series = settings.monitor_max_document_series
        self.monitor = FreshnessMonitor(
            self._source, self._store,
            max_series=None if series == "all" else series,
            grace=timedelta(seconds=settings.sweep_grace_seconds),
        )
        registry.register(FreshnessCollector(
            self.monitor,
            lag_bound_seconds=settings.freshness_lag_bound_seconds,
            leftover_bound_seconds=settings.leftover_bound_seconds,
            version=__version__,
        ))
        self.interval_s = settings.monitor_interval_seconds
        self._thread = threading.Thread(target=self.monitor.run_forever, args=(self.interval_s,),
                                        name="freshness-monitor", daemon=True)

    def start(self) -> MonitorThread:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.monitor.stop()
        self._thread.join(STOP_TIMEOUT_S)
        if not self._thread.is_alive():
            self._source.close()
            self._store.close()


@dataclass
class Scheduler:
    """The reconcile on ``reindex_cron`` and the sweep every ``sweep_interval_seconds``."""

    runner: JobRunner
    scheduler: BaseScheduler

    @classmethod
    def start(cls, settings: Settings, registry: CollectorRegistry) -> Scheduler:
        """Raises ``StoreError`` / ``LeaseError`` when the run log or the lease cannot open."""
        source = open_configured_source(settings)
        store = SQLiteStore(index_path(settings))
        runner = open_runner(settings, source, store, trigger="scheduled",
                             metrics=ReindexMetrics.create(registry))
        try:
            runner.refresh_metrics()
            sched = scheduler_for(settings, runner, runner.last_attempt())
            sched.start()
        except BaseException:
            runner.close()
            raise
        return cls(runner, sched)

    def next_reconcile(self) -> str:
        job = self.scheduler.get_job("reconcile")
        return str(job.next_run_time) if job is not None else "?"

    def stop(self) -> None:
        """A running reconcile stops between two documents (recorded as interrupted)."""
        self.runner.stop_event.set()
        self.scheduler.shutdown(wait=True)
        self.runner.close()
