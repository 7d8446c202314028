"""``policy-indexer replay``: a change log into Kafka, or into the embedded mode.

``replay_to_kafka`` publishes the log as events (with a rate and a limit).
``replay_embedded`` queues the log and returns once the embedded index has
caught up:

The changes are queued durably first (in batches, one transaction each), then
a worker in this process drains the queue; the progress bar counts committed
changes. If another process already consumes the queue (``policy-indexer run``),
the changes are queued and this waits for that process to drain them.

Killed at any point, the same command run again converges to the same index:
queued changes survive in the queue file, and the worker's version guard turns
the second copy of every change into a no-op.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry
from tqdm import tqdm

from analysis.languages import load_detector_in_background
from events.changelog import ChangeLogError, count_lines, read_changelog
from events.model import ChangeEvent
from metrics.definitions import WorkerMetrics
from policy_indexer.runtime.backends import EmbeddedBackends
from policy_indexer.runtime.connections import kafka_connection
from policy_indexer.runtime.parts import ThreadPart
from policy_indexer.settings import Settings
from transport.local_queue import ConsumerBusy

BATCH = 500


class ReplayStopped(Exception):
    """The worker stopped before the queue was empty; says how much is left and why."""


@dataclass(frozen=True)
class ReplayResult:
    queued: int
    processed: int  # committed during this replay (includes leftovers of an earlier run)
    documents: int
    chunks: int
    dead_letters: int
    consumed_here: bool


def replay_embedded(
    embedded: EmbeddedBackends,
    changelog: Path,
    *,
    limit: int | None = None,
    progress: bool = True,
    checkpoint: Callable[[str], None] = lambda _step: None,
) -> ReplayResult:
    """Queue the log's changes, index them, return when the queue is empty.

    A bad line stops the queueing; what was queued before it is still indexed,
    then ``ChangeLogError`` is raised (with ``queued`` added to its message).
    """
    # The detector's model loads beside the queueing (most of it releases the GIL), not
    # in the worker's first document that declares no language.
    load_detector_in_background()
    events: Iterable[ChangeEvent] = read_changelog(changelog)
    if limit is not None:
        events = itertools.islice(events, limit)
    publisher = embedded.publisher()
    queued = 0
    bad_line: ChangeLogError | None = None
    batch: list[ChangeEvent] = []
    with tqdm(unit="change", desc="queue", disable=not progress) as bar:
        try:
            for event in events:
                batch.append(event)
                if len(batch) >= BATCH:
                    queued += publisher.publish_many(batch)
                    bar.update(len(batch))
                    batch = []
        except ChangeLogError as exc:
            bad_line = exc  # the changes before it still go in
        queued += publisher.publish_many(batch)
        bar.update(len(batch))
    total = embedded.queue.pending(embedded.topic)
    workers: list[ThreadPart] = []  # the one this process starts, if it may
    try:
        processed = _wait_until_drained(embedded, workers, total, progress, checkpoint)
    finally:
        for worker in workers:
            worker.stop()
    if bad_line is not None:
        raise ChangeLogError(
            f"{bad_line} ({queued} changes before it were queued and indexed)"
        ) from bad_line
    states = list(embedded.store.iter_states())
    return ReplayResult(
        queued=queued,
        processed=processed,
        documents=sum(not s.deleted for s in states),
        chunks=sum(embedded.store.count_chunks().values()),
        dead_letters=len(embedded.queue.dead_letters(embedded.topic)),
        consumed_here=bool(workers),
    )


def _try_worker(
    embedded: EmbeddedBackends, checkpoint: Callable[[str], None]
) -> ThreadPart | None:
    """A worker thread on the queue, or None while another process consumes it.

    It takes up to ``replay_batch_records`` changes a poll (more than a live worker's
    ``commit_every_records``): the whole log is queued before it starts, and a
    batch writes only the newest version of each of its documents, so the
    versions a later change of the same batch replaces are never written and
    deleted again. Same index at the end, less work on the way.
    """
    try:
        return embedded.start_worker(WorkerMetrics.create(CollectorRegistry()),
                                     checkpoint=checkpoint,
                                     batch=embedded.settings.replay_batch_records)
    except ConsumerBusy:
        return None


def _wait_until_drained(
    embedded: EmbeddedBackends,
    workers: list[ThreadPart],
    total: int,
    progress: bool,
    checkpoint: Callable[[str], None],
) -> int:
    topic = embedded.topic
    next_try = 0.0
    with tqdm(total=total, unit="change", desc="index", disable=not progress) as bar:
        while True:
            left = embedded.queue.pending(topic)
            bar.update(max(0, total - left - bar.n))
            if left == 0:
                return total
            for worker in workers:
                if not worker.alive():
                    why = repr(worker.error) if worker.error else "it stopped"
                    raise ReplayStopped(f"the worker ended with {left} changes still queued: {why}")
            if not workers and time.monotonic() >= next_try:
                # Another process consumes the queue; if it dies its lease lapses
                # and this process takes over.
                started = _try_worker(embedded, checkpoint)
                if started is not None:
                    workers.append(started)
                next_try = time.monotonic() + 1.0
            time.sleep(0.02)  # the count is one indexed read; a replay ends this much later



@dataclass(frozen=True)
class KafkaReplay:
    published: int
    topic: str


def replay_to_kafka(
    settings: Settings,
    changelog: Path,
    *,
    topic: str | None = None,
    rate: float | None = None,
    limit: int | None = None,
) -> KafkaReplay:
    """Publish the log's changes in order (keyed by document id), then flush.

    A bad line stops it: ``ChangeLogError`` says how many were published before it.
    Changes the broker did not acknowledge raise ``PublishUnavailable`` (never silent).
    """
    from policy_indexer.runtime.topics import create_configured_topics  # noqa: PLC0415
    from transport.kafka import new_producer  # noqa: PLC0415
    from transport.publisher import PublishUnavailable  # noqa: PLC0415

    topic = topic or settings.kafka_topic
    create_configured_topics(settings, [topic])
    producer = new_producer(kafka_connection(settings))
    total = count_lines(changelog) if limit is None else limit
    sent = 0
    refused: list[BaseException] = []
    started = time.monotonic()
    try:
        with tqdm(total=total, unit="change", desc=f"replay -> {topic}") as bar:
            for event in read_changelog(changelog):
                if limit is not None and sent >= limit:
                    break
                if rate:
                    delay = started + sent / rate - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                future = producer.send(topic, key=event.document_id.encode(),
                                       value=event.to_json_bytes())
                future.add_errback(refused.append)
                sent += 1
                bar.update(1)
        producer.flush(timeout=60)
    except ChangeLogError as exc:
        raise ChangeLogError(f"{exc} ({sent} changes were published before it)") from exc
    finally:
        producer.close(timeout=10)
    if refused:
        raise PublishUnavailable(
            f"{len(refused)} of {sent} changes were not acknowledged by Kafka: {refused[0]!r}"
        )
    return KafkaReplay(sent, topic)

