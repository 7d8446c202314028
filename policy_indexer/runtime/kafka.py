"""``policy-indexer run`` in Kafka mode: indexing worker processes in one consumer group.

One process: the runner (``runtime.runner``) over the worker part, with its
``/metrics`` and probes, waiting for Kafka and Elasticsearch while alive and
not ready. Several (``worker_processes``): one child process
each (spawned, ``metrics_port + i``), supervised as parts; SIGTERM/SIGINT is
forwarded to every child, and the parent exits 1 when any child failed.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal
from multiprocessing.process import BaseProcess

import structlog
from prometheus_client import CollectorRegistry

from consumers.retry import HealthState
from metrics.definitions import WorkerMetrics
from policy_indexer.logs import configure_logging
from policy_indexer.runtime import faults
from policy_indexer.runtime.backends import Backends
from policy_indexer.runtime.http import process_registry, worker_health, worker_heartbeat
from policy_indexer.runtime.parts import ThreadPart, stop_on_signals
from policy_indexer.runtime.runner import ProbeServer, Readiness, Running, run_parts
from policy_indexer.settings import Settings

log = structlog.get_logger(__name__)

# The loop commits what it has done, then returns; past this the process exits anyway
# (what it had not committed is delivered again: harmless, the writes are idempotent).
WORKER_STOP_TIMEOUT_S = 60.0

class WorkersFailed(Exception):
    """At least one worker process exited with a failure."""


def run_kafka(settings: Settings, processes: int | None = None) -> None:
    count = processes or settings.worker_processes
    if count == 1:
        run_worker(settings)
        return
    _run_children(settings, count)


def run_worker(settings: Settings, metrics_port: int | None = None) -> None:
    """One worker process, until SIGTERM/SIGINT (the worker commits what it has done):
    the runner over its one part.

    ``/healthz`` and ``/readyz`` answer from the first moment: while Kafka or
    Elasticsearch cannot be reached (or refuse the credentials) the process stays
    up, not ready, says why, and tries again with backoff, so an orchestrator
    sees a pod that waits for its dependencies, not a crash loop.
    """
    health = HealthState(starting=True)

    def started(running: Running) -> None:
        assert running.server is not None
        log.info("worker started", topic=settings.kafka_topic, group=settings.kafka_group_id,
                 index_prefix=settings.index_prefix, metrics_port=running.server.port)

    port = settings.metrics_port if metrics_port is None else metrics_port
    run_parts(settings, [functools.partial(worker_part, health=health)],
              registry=process_registry(),
              probes=ProbeServer(port, "POLICY_INDEXER_METRICS_PORT", worker_health(health),
                                 worker_heartbeat(health)),
              ready=Readiness(lambda backends: backends.ensure_ready(),
                              "Kafka and Elasticsearch", health),
              on_started=started)


def worker_part(settings: Settings, backends: Backends, registry: CollectorRegistry, *,
                health: HealthState) -> ThreadPart:
    """The worker loop over the mode's consumer, index and dead letters, as a part; its
    stop asks the loop to commit what it has done and return (``/readyz``: stopping)."""
    worker = backends.worker(WorkerMetrics.create(registry), health=health,
                             checkpoint=faults.checkpoint())
    return ThreadPart("worker", worker.run, worker.request_stop,
                      stop_timeout_s=WORKER_STOP_TIMEOUT_S)


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
