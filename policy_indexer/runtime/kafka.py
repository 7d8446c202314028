"""``policy-indexer run`` in Kafka mode: indexing worker processes in one consumer group.

One process: the worker loop in the main thread's supervisor, with its
``/metrics`` and ``/healthz``. Several (``worker_processes``): one child process
each (spawned, ``metrics_port + i``), supervised as parts; SIGTERM/SIGINT is
forwarded to every child, and the parent exits 1 when any child failed.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from contextlib import ExitStack
from multiprocessing.process import BaseProcess

import structlog

from consumers.retry import HealthState
from consumers.worker import Worker
from metrics.definitions import WorkerMetrics
from policy_indexer.logs import configure_logging
from policy_indexer.runtime import faults
from policy_indexer.runtime.backends import KafkaBackends
from policy_indexer.runtime.http import process_registry, worker_health, worker_heartbeat
from policy_indexer.runtime.parts import Supervisor, stop_on_signals
from policy_indexer.runtime.runner import ProbeServer, open_probe_server
from policy_indexer.runtime.startup import until_ready
from policy_indexer.settings import Settings

log = structlog.get_logger(__name__)

class WorkersFailed(Exception):
    """At least one worker process exited with a failure."""


def run_kafka(settings: Settings, processes: int | None = None) -> None:
    count = processes or settings.worker_processes
    if count == 1:
        run_worker(settings)
        return
    _run_children(settings, count)


def run_worker(settings: Settings, metrics_port: int | None = None) -> None:
    """One worker process, until SIGTERM/SIGINT (the worker commits what it has done).

    ``/healthz`` and ``/readyz`` answer from the first moment: while Kafka or
    Elasticsearch cannot be reached (or refuse the credentials) the process stays
    up, not ready, says why, and tries again with backoff, so an orchestrator
    sees a pod that waits for its dependencies, not a crash loop.
    """
    registry = process_registry()
    metrics = WorkerMetrics.create(registry)
    health = HealthState(starting=True)
    stop = threading.Event()
    worker: Worker | None = None

    def on_signal(why: str) -> None:
        log.info("stop requested", signal=why)
        stop.set()
        health.stopping = True
        if worker is not None:
            worker.request_stop()

    with Supervisor() as parts, stop_on_signals(on_signal):
        port = settings.metrics_port if metrics_port is None else metrics_port
        server = open_probe_server(settings, ProbeServer(
            port, "POLICY_INDEXER_METRICS_PORT", worker_health(health), worker_heartbeat(health)),
            registry)
        parts.start(server)
        backends = connect_with_retry(settings, health, stop)
        if backends is None:
            return  # stopped before the dependencies answered
        parts.add_stop("backends", backends.close)
        worker = backends.worker(metrics, health=health, checkpoint=faults.checkpoint())
        health.starting = False
        log.info("worker started", topic=settings.kafka_topic, group=settings.kafka_group_id,
                 index_prefix=settings.index_prefix, metrics_port=server.port)
        # The worker loop is the process: it runs in the main thread; a signal asks it to
        # stop, it commits what it has done and returns, then the parts stop.
        if not stop.is_set():
            worker.run()


def connect_with_retry(
    settings: Settings, health: HealthState, stop: threading.Event
) -> KafkaBackends | None:
    """The backends, once the topics exist and the index is ready; ``None`` if stopped first."""

    def open_ready() -> KafkaBackends:
        with ExitStack() as undo:  # closes what was opened if a step fails
            backends = KafkaBackends.open(settings)
            undo.callback(backends.close)
            backends.ensure_topics()
            backends.store.ensure_ready()
            undo.pop_all()
            return backends

    return until_ready(open_ready, what="Kafka and Elasticsearch", state=health, stop=stop,
                       policy=settings.retry_policy())


def _child(settings: Settings, port: int, fault_spec: str | None) -> None:
    configure_logging(settings.log_level, settings.log_format)
    faults.install(fault_spec)
    run_worker(settings, metrics_port=port)


def _run_children(settings: Settings, count: int) -> None:
    ctx = multiprocessing.get_context("spawn")
    children: list[BaseProcess] = [
        ctx.Process(target=_child, args=(settings, settings.metrics_port + i,
                                         faults.installed_spec()), daemon=False)
        for i in range(count)
    ]
    for child in children:
        child.start()

    def forward(why: str) -> None:
        log.info("stop requested", signal=why)
        for child in children:
            if child.pid is not None and child.is_alive():
                os.kill(child.pid, signal.SIGTERM)

    with stop_on_signals(forward):
        for child in children:
            child.join()
    if any(c.exitcode for c in children):
        raise WorkersFailed(
            "worker processes failed: "
            + ", ".join(f"pid {c.pid} exit {c.exitcode}" for c in children if c.exitcode)
        )
