"""The embedded worker as a long-running process: the local queue into the SQLite index.

``run_embedded`` is what ``policy-indexer run`` does with ``pipeline=embedded``
(so far the worker, ``/metrics`` and ``/healthz``; the folder watcher, webhook
receiver, monitor and scheduler of issue 8 join it later). It prints the mode
and where everything is, and runs until SIGTERM or SIGINT, then commits what is
done and exits. ``policy-indexer replay`` run beside it only queues, and waits
for this process to index.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType

import click
import structlog
from prometheus_client import CollectorRegistry

from consumers.health import HealthServer
from consumers.retry import HealthState
from metrics.definitions import WorkerMetrics
from policy_indexer import __version__
from policy_indexer.embedded import Embedded, index_path, queue_path
from policy_indexer.settings import Settings
from store.errors import StoreError
from transport.local_queue import ConsumerBusy, QueueError

log = structlog.get_logger(__name__)


def run_embedded(
    settings: Settings, *, checkpoint: Callable[[str], None] = lambda _step: None
) -> None:
    registry = CollectorRegistry()
    metrics = WorkerMetrics.create(registry)
    health = HealthState()
    try:
        embedded = Embedded.open(settings)
    except (StoreError, QueueError) as exc:
        raise click.ClickException(f"cannot open the embedded mode: {exc}") from exc
    try:
        try:
            worker = embedded.worker(metrics, health=health, checkpoint=checkpoint)
        except ConsumerBusy as exc:
            raise click.ClickException(f"another policy-indexer already runs here: {exc}") from exc

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            log.info("stop requested", signal=signal.Signals(signum).name)
            worker.request_stop()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        server = HealthServer(settings.metrics_host, settings.metrics_port, registry, health)
        server.start()
        click.echo(
            f"policy-indexer {__version__}: embedded mode (one process, no servers)\n"
            f"  index:   {index_path(settings)} (SQLite, FTS5)\n"
            f"  queue:   {queue_path(settings)} (topic {embedded.topic!r})\n"
            f"  metrics: http://{settings.metrics_host}:{server.port}/metrics  "
            f"health: /healthz\n"
            f"  feed it: policy-indexer replay FILE.jsonl[.gz]   see it: policy-indexer status",
        )
        try:
            worker.run()
        finally:
            server.stop()
    finally:
        embedded.close()
