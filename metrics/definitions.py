"""Every metric the indexing worker and the sweep export, declared once.

Build them into a registry you pass in (``WorkerMetrics.create(registry)``); nothing
is registered at import. Names, types and meanings:

- ``policy_indexer_events_total{outcome}`` counter: change events handled, by outcome:
  ``indexed``, ``deleted``, ``skipped_stale`` (version below the index's),
  ``skipped_duplicate`` (version equal to the index's), ``dead_lettered``.
- ``policy_indexer_unchanged_content_total`` counter: upserts whose content hash equals
  the indexed one (re-written at the new version, see docs/indexing.md).
- ``policy_indexer_chunks_written_total`` counter: chunks written to the store.
- ``policy_indexer_chunks_deleted_total`` counter: older chunks removed by the delete step.
- ``policy_indexer_dead_letters_total{reason}`` counter: events sent to the dead-letter
  topic, by reason (``not_json``, ``schema``, ``chunker``, ``rejected``).
- ``policy_indexer_transient_errors_total{operation}`` counter: transient failures that
  were retried (``store``, ``kafka``).
- ``policy_indexer_retrying`` gauge: 1 while the worker is backing off from a transient
  failure, else 0.
- ``policy_indexer_offsets_committed_total`` counter: offset commits to Kafka.
- ``policy_indexer_event_processing_seconds`` histogram: time from taking an event to
  having its delete step done.
- ``policy_indexer_last_event_processed_timestamp_seconds`` gauge: Unix time of the last
  event the worker finished (any outcome).
- ``policy_indexer_sweep_leftovers_total{reason}`` counter: leftover chunks the sweep found.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

NAMESPACE = "policy_indexer"


@dataclass(frozen=True)
class WorkerMetrics:
    events: Counter
    unchanged_content: Counter
    chunks_written: Counter
    chunks_deleted: Counter
    dead_letters: Counter
    transient_errors: Counter
    retrying: Gauge
    offsets_committed: Counter
    event_processing: Histogram
    last_event_processed: Gauge
    sweep_leftovers: Counter

    @classmethod
    def create(cls, registry: CollectorRegistry) -> WorkerMetrics:
        ns = NAMESPACE
        return cls(
            events=Counter("events", "Change events handled, by outcome.", ["outcome"],
                           namespace=ns, registry=registry),
            unchanged_content=Counter("unchanged_content", "Upserts with unchanged content.",
                                      namespace=ns, registry=registry),
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
            sweep_leftovers=Counter("sweep_leftovers", "Leftover chunks found by the sweep.",
                                    ["reason"], namespace=ns, registry=registry),
        )
