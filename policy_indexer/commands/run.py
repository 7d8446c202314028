"""``policy-indexer run``: start the pipeline.

With ``POLICY_INDEXER_PIPELINE=kafka`` it starts the indexing worker(s): Kafka
consumer group -> chunker -> Elasticsearch. With ``pipeline=embedded`` (the
default) it runs the whole pipeline in one process: ``policy_indexer.embedded_run``.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections import Counter
from collections.abc import Callable
from types import FrameType

import click
import structlog
from prometheus_client import CollectorRegistry

from consumers.health import HealthServer
from consumers.retry import HealthState
from consumers.transport import ensure_topics, make_consumer, make_producer
from consumers.worker import KafkaDeadLetterSink, KafkaWorker
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from policy_indexer.logs import configure_logging
from policy_indexer.settings import Settings
from store.elasticsearch import ElasticsearchStore

log = structlog.get_logger(__name__)


def kill_hook(spec: str | None) -> Callable[[str], None]:
    """Test hook: SIGKILL this process the n-th time it reaches a step ('step:n')."""
    if not spec:
        return lambda _step: None
    step, _, nth = spec.partition(":")
    target = int(nth or "1")
    seen: Counter[str] = Counter()

    def checkpoint(reached: str) -> None:
        seen[reached] += 1
        if reached == step and seen[reached] == target:
            log.warning("test kill hook: SIGKILL", step=step, n=target)
            os.kill(os.getpid(), signal.SIGKILL)

    return checkpoint


def open_store(settings: Settings) -> ElasticsearchStore:
    key = settings.elasticsearch_api_key
    store = ElasticsearchStore.connect(
        settings.elasticsearch_url,
        settings.index_prefix,
        api_key=key.get_secret_value() if key else None,
        timeout_s=settings.elasticsearch_timeout_seconds,
    )
    store.bulk_max_actions = settings.bulk_max_actions
    store.bulk_max_bytes = settings.bulk_max_bytes
    return store


def run_worker(settings: Settings, metrics_port: int | None = None) -> None:
    """One worker process, until SIGTERM/SIGINT."""
    registry = CollectorRegistry()
    metrics = WorkerMetrics.create(registry)
    health = HealthState()
    checkpoint = kill_hook(settings.worker_kill_at)
    store = open_store(settings)
    store.ensure_ready()
    producer = make_producer(settings.kafka_bootstrap_servers)
    consumer = make_consumer(
        settings.kafka_bootstrap_servers,
        settings.kafka_group_id,
        max_poll_records=settings.commit_every_records,
        session_timeout_ms=settings.kafka_session_timeout_ms,
        heartbeat_interval_ms=max(500, settings.kafka_session_timeout_ms // 5),
    )
    processor = Indexer(
        store, checkpoint=checkpoint, on_unchanged=metrics.unchanged_content.inc
    )
    worker = KafkaWorker(
        consumer,
        settings.kafka_topic,
        processor,
        KafkaDeadLetterSink(producer, settings.kafka_dead_letter_topic),
        metrics=metrics,
        health=health,
        retry=settings.retry_policy(),
        commit=settings.commit_policy(),
        kafka_away_after_s=settings.kafka_session_timeout_ms / 1000,
        checkpoint=checkpoint,
    )

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("stop requested", signal=signal.Signals(signum).name)
        worker.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    port = settings.metrics_port if metrics_port is None else metrics_port
    server = HealthServer(settings.metrics_host, port, registry, health).start()
    log.info("worker started", topic=settings.kafka_topic, group=settings.kafka_group_id,
             index_prefix=settings.index_prefix, metrics_port=server.port)
    try:
        worker.run()
    finally:
        server.stop()
        producer.close(timeout=5)
        store.close()


def _child(settings: Settings, port: int) -> None:
    configure_logging(settings.log_level, settings.log_format)
    run_worker(settings, metrics_port=port)


@click.command()
@click.option("--processes", type=int, default=None,
              help="Worker processes (default: settings.worker_processes).")
@click.pass_obj
def run(settings: Settings, processes: int | None) -> None:
    """Run the indexing pipeline (embedded by default; PIPELINE=kafka for the workers)."""
    if settings.pipeline == "embedded":
        # Imported here: embedded_run's parts import commands.reindex, which imports this module.
        from policy_indexer.embedded_run import run_embedded  # noqa: PLC0415

        run_embedded(settings, checkpoint=kill_hook(settings.worker_kill_at))
        return
    ensure_topics(settings.kafka_bootstrap_servers,
                  [settings.kafka_topic, settings.kafka_dead_letter_topic],
                  partitions=settings.kafka_partitions)
    count = processes or settings.worker_processes
    if count == 1:
        run_worker(settings)
        return
    ctx = multiprocessing.get_context("spawn")
    children = [
        ctx.Process(target=_child, args=(settings, settings.metrics_port + i), daemon=False)
        for i in range(count)
    ]
    for child in children:
        child.start()

    def forward(signum: int, _frame: FrameType | None) -> None:
        for child in children:
            if child.pid is not None and child.is_alive():
                os.kill(child.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for child in children:
        child.join()
    failed = [c.exitcode for c in children if c.exitcode]
    if failed:
        sys.exit(1)
