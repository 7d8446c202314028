"""Every metric the indexing worker and the scheduled jobs export, declared once.

Build them into a registry you pass in (``WorkerMetrics.create(registry)``); nothing
is registered at import. Names, types and meanings:

- ``policy_indexer_events_total{outcome}`` counter: change events handled, by outcome:
  ``indexed``, ``deleted``, ``skipped_stale`` (version below the index's),
  ``skipped_duplicate`` (version equal to the index's), ``dead_lettered``.
- ``policy_indexer_unchanged_content_total`` counter: upserts whose content hash equals
  the indexed one (re-written at the new version, see docs/indexing.md).
- ``policy_indexer_version_ties_total`` counter: events at the indexed version that
  changed something (other content, or a delete) and were applied, not dropped as
  duplicates: the source gave two changes one version (``indexing.rules.guard``).
- ``policy_indexer_chunks_written_total`` counter: chunks written to the store.
- ``policy_indexer_chunks_deleted_total`` counter: older chunks removed by the delete step.
- ``policy_indexer_dead_letters_total{reason}`` counter: events sent to the dead-letter
  topic, by reason (``not_json``, ``schema``, ``chunker``, ``rejected``).
- ``policy_indexer_transient_errors_total{operation}`` counter: transient failures that
  were retried (``store``, ``kafka``; for Kafka also each failed commit and each time
  the group coordinator went out of reach), and ``refresh``: a caught-up worker's refresh
  after its batch that failed (not retried; the index refreshes on its own).
- ``policy_indexer_retrying`` gauge: 1 while the worker is backing off from a transient
  failure or cannot reach Kafka's group coordinator, else 0.
- ``policy_indexer_offsets_committed_total`` counter: offset commits to Kafka.
- ``policy_indexer_event_processing_seconds`` histogram: time from taking an event to
  having its delete step done.
- ``policy_indexer_last_event_processed_timestamp_seconds`` gauge: Unix time of the last
  event the worker finished (any outcome).
- ``policy_indexer_change_to_indexed_seconds`` histogram: from the change at the source
  (the event's ``changed_at``) to the worker having applied it (outcomes ``indexed`` and
  ``deleted``): the end-to-end latency of the pipeline. Negative (source clock ahead)
  counts as 0.
- ``policy_indexer_consumer_lag_records{topic,partition}`` gauge: records of the partition
  after the last one this worker handled (high watermark - next offset), set as it goes.
- ``policy_indexer_heartbeat_timestamp_seconds`` gauge: Unix time of the worker loop's last
  turn (a poll); an idle worker still beats, a stuck one does not.
- ``policy_indexer_build_info{version}`` gauge 1: the running version.

The nightly reindex and its scheduler, ``ReindexMetrics.create(registry)``:

- ``policy_indexer_reindex_last_success_timestamp_seconds`` gauge: Unix time the last
  successful (non-dry) reconcile ended, read back from the run log so it survives restarts
  and counts runs by hand and by other replicas; 0: never. The 26-hour alert watches it.
- ``policy_indexer_reindex_last_outcome{outcome}`` gauge: 1 for the outcome of the last
  reconcile (``success``, ``failed``, ``refused``), 0 for the others.
- ``policy_indexer_reindex_last_duration_seconds`` gauge: wall time of the last reconcile.
- ``policy_indexer_reindex_last_documents{decision}`` gauge: documents per decision in the
  last reconcile (``up_to_date``, ``reindex``, ``delete``, ``repair``, ``tombstone``, ``ahead``).
- ``policy_indexer_reindex_runs_total{job,outcome}`` counter: job runs (``reconcile``,
  ``sweep``) by outcome, counted by the process that ran them.
- ``policy_indexer_reindex_documents_total{decision}`` counter: documents per decision,
  summed over runs.
- ``policy_indexer_sweep_last_success_timestamp_seconds`` gauge: as above, for the sweep.
- ``policy_indexer_sweep_leftovers_total{reason}`` counter: leftover chunks the sweep found
  (and deleted), by ``deleter.sweep`` reason (``older``, ``deleted-document``,
  ``above-current``, ``unknown-document``), counted by the long-lived process that ran
  the sweep (the scheduler, the embedded run). The one-shot ``policy-indexer sweep``
  prints and logs its report instead: a counter in a process that exits is never scraped.
- ``policy_indexer_scheduler_lease_skips_total{job}`` counter: occurrences this replica left
  to another (lease held or the occurrence already run).
"""

from __future__ import annotations

import importlib.metadata
import time
from dataclasses import dataclass
from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info

from deleter.sweep import LEFTOVER_REASONS
from foundation.metric_names import NAMESPACE

OUTCOMES = ("indexed", "deleted", "skipped_stale", "skipped_duplicate", "dead_lettered")
DEAD_LETTER_REASONS = ("not_json", "schema", "chunker", "rejected")


@dataclass(frozen=True)
class WorkerMetrics:
    events: Counter
    unchanged_content: Counter
    version_ties: Counter
    chunks_written: Counter
    chunks_deleted: Counter
    dead_letters: Counter
    transient_errors: Counter
    retrying: Gauge
    offsets_committed: Counter
    event_processing: Histogram
    last_event_processed: Gauge
    change_to_indexed: Histogram
    consumer_lag: Gauge
    heartbeat: Gauge
    build_info: Info

    def record_applied(self, outcome: str, changed_at: datetime) -> None:
        """Observe the end-to-end latency of a change the worker applied."""
        if outcome in ("indexed", "deleted"):
            self.change_to_indexed.observe(max(0.0, time.time() - changed_at.timestamp()))

    def beat(self) -> None:
        self.heartbeat.set(time.time())

    @classmethod
    def create(cls, registry: CollectorRegistry) -> WorkerMetrics:
        metrics = cls._build(registry)
        # Series exist from the start at 0, so the first dead letter is an increase
        # that rate()/increase() can see (a series born at 1 shows no increase).
        for outcome in OUTCOMES:
            metrics.events.labels(outcome=outcome)
        for reason in DEAD_LETTER_REASONS:
            metrics.dead_letters.labels(reason=reason)
        return metrics

    @classmethod
    def _build(cls, registry: CollectorRegistry) -> WorkerMetrics:
        ns = NAMESPACE
        return cls(
            events=Counter("events", "Change events handled, by outcome.", ["outcome"],
                           namespace=ns, registry=registry),
            unchanged_content=Counter("unchanged_content", "Upserts with unchanged content.",
                                      namespace=ns, registry=registry),
            version_ties=Counter("version_ties", "Equal-version events that changed "
                                 "something, applied.", namespace=ns, registry=registry),
            chunks_written=Counter("chunks_written", "Chunks written to the store.",
                                   namespace=ns, registry=registry),
            chunks_deleted=Counter("chunks_deleted", "Older chunks removed by the delete step.",
                                   namespace=ns, registry=registry),
            dead_letters=Counter("dead_letters", "Events sent to the dead-letter topic.",
                                 ["reason"], namespace=ns, registry=registry),
            transient_errors=Counter("transient_errors", "Transient failures retried.",
                                     ["operation"], namespace=ns, registry=registry),
            retrying=Gauge("retrying", "1 while backing off from a transient failure.",
                           namespace=ns, registry=registry),
            offsets_committed=Counter("offsets_committed", "Offset commits to Kafka.",
                                      namespace=ns, registry=registry),
            event_processing=Histogram(
                "event_processing_seconds", "Time to handle one event, delete step included.",
                namespace=ns, registry=registry,
                buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            ),
            last_event_processed=Gauge(
                "last_event_processed_timestamp_seconds", "Unix time of the last event handled.",
                namespace=ns, registry=registry,
            ),
            change_to_indexed=Histogram(
                "change_to_indexed_seconds",
                "From the change at the source (changed_at) to the worker having applied it.",
                namespace=ns, registry=registry,
                buckets=(0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 86400),
            ),
            consumer_lag=Gauge(
                "consumer_lag_records", "Records of the partition after the last one handled.",
                ["topic", "partition"], namespace=ns, registry=registry,
            ),
            heartbeat=Gauge(
                "heartbeat_timestamp_seconds", "Unix time of the worker loop's last turn.",
                namespace=ns, registry=registry,
            ),
            build_info=_build_info(registry),
        )


def _build_info(registry: CollectorRegistry) -> Info:
    info = Info("build", "The running policy-indexer version.", namespace=NAMESPACE,
                registry=registry)
    try:
        version = importlib.metadata.version("policy-indexer")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    info.info({"version": version})
    return info


REINDEX_OUTCOMES = ("success", "failed", "refused")
REINDEX_DECISIONS = ("up_to_date", "reindex", "delete", "repair", "tombstone", "ahead")


@dataclass(frozen=True)
class ReindexMetrics:
    """The reindex scheduler's metrics (listed in the module docstring)."""

    last_success: Gauge
    last_outcome: Gauge
    last_duration: Gauge
    last_documents: Gauge
    runs: Counter
    documents: Counter
    sweep_last_success: Gauge
    sweep_leftovers: Counter
    lease_skips: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> ReindexMetrics:
        ns = NAMESPACE
        metrics = cls(
            last_success=Gauge(
                "reindex_last_success_timestamp_seconds",
                "Unix time the last successful reconcile ended (0: never).",
                namespace=ns, registry=registry,
            ),
            last_outcome=Gauge("reindex_last_outcome", "1 for the last reconcile's outcome.",
                               ["outcome"], namespace=ns, registry=registry),
            last_duration=Gauge("reindex_last_duration_seconds",
                                "Wall time of the last reconcile.", namespace=ns,
                                registry=registry),
            last_documents=Gauge("reindex_last_documents",
                                 "Documents per decision in the last reconcile.", ["decision"],
                                 namespace=ns, registry=registry),
            runs=Counter("reindex_runs", "Reindex job runs by outcome.", ["job", "outcome"],
                         namespace=ns, registry=registry),
            documents=Counter("reindex_documents", "Documents per reconcile decision.",
                              ["decision"], namespace=ns, registry=registry),
            sweep_last_success=Gauge(
                "sweep_last_success_timestamp_seconds",
                "Unix time the last successful sweep ended (0: never).",
                namespace=ns, registry=registry,
            ),
            sweep_leftovers=Counter("sweep_leftovers", "Leftover chunks found by the sweep.",
                                    ["reason"], namespace=ns, registry=registry),
            lease_skips=Counter("scheduler_lease_skips",
                                "Job occurrences left to another scheduler replica.", ["job"],
                                namespace=ns, registry=registry),
        )
        for decision in REINDEX_DECISIONS:
            metrics.documents.labels(decision=decision)
        for reason in LEFTOVER_REASONS:
            metrics.sweep_leftovers.labels(reason=reason)
        for job in ("reconcile", "sweep"):
            metrics.lease_skips.labels(job=job)
            for outcome in REINDEX_OUTCOMES:
                metrics.runs.labels(job=job, outcome=outcome)
        return metrics

    def record_reconcile(
        self, outcome: str, duration_s: float, decided: dict[str, int], ended_at: float
    ) -> None:
        for known in REINDEX_OUTCOMES:
            self.last_outcome.labels(outcome=known).set(1 if known == outcome else 0)
        self.last_duration.set(duration_s)
        for decision in REINDEX_DECISIONS:
            count = decided.get(decision, 0)
            self.last_documents.labels(decision=decision).set(count)
            self.documents.labels(decision=decision).inc(count)
        self.runs.labels(job="reconcile", outcome=outcome).inc()
        if outcome == "success":
            self.last_success.set(ended_at)
