"""Every metric the freshness monitor exports, declared once: name, type, meaning.

The monitor computes them at scrape time (``metrics.collector``) from its last
successful cycle, so a lag keeps growing between cycles and while the source
cannot be listed. Snapshot metrics are absent until the first successful
cycle; the failure metrics are always present.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from foundation.metric_names import NAMESPACE


@dataclass(frozen=True)
class MetricDef:
    name: str  # full name; counters without the ``_total`` suffix
    kind: Literal["gauge", "counter", "info"]
    help: str
    labels: tuple[str, ...] = ()


P = NAMESPACE + "_"

DOCUMENT_LAG = MetricDef(
    P + "document_lag_seconds", "gauge",
    "Per document: 0 when the index holds the source's current version, else seconds since "
    "the source made the first change the index lacks. Only the N most lagging documents.",
    ("document_id", "status"),
)
DOCUMENT_LAG_SERIES_DROPPED = MetricDef(
    P + "document_lag_series_dropped", "gauge",
    "Lagging documents left out of document_lag_seconds by the series cap.",
)
MAX_LAG = MetricDef(P + "max_lag_seconds", "gauge", "Largest lag of any document.")
LAG_P95 = MetricDef(
    P + "lag_p95_seconds", "gauge",
    "95th percentile (nearest rank) of lag over every document live at the source or in the "
    "index, current documents counting 0.",
)
DOCUMENTS_BEHIND = MetricDef(
    P + "documents_behind", "gauge",
    "Documents whose index copy is not the source's current version, by status: behind, "
    "missing_from_index, deleted_at_source.",
    ("status",),
)
UNREADABLE_DOCUMENTS = MetricDef(
    P + "unreadable_documents", "gauge",
    "Documents the source lists but cannot read (a folder's file without permission, not "
    "UTF-8, binary, bad front matter, a symlink loop or outside the root, a FIFO, too large), "
    "by reason. They have no lag figure; their index copy stays as it was.",
    ("reason",),
)
UNREADABLE_DOCUMENT = MetricDef(
    P + "unreadable_document", "gauge",
    "1 per unreadable document (the first N by id, N = the per-document series cap), with "
    "its reason: which files to fix.",
    ("document_id", "reason"),
)
OTHER_OWNER_DOCUMENTS = MetricDef(
    P + "other_owner_documents", "gauge",
    "Documents the index gives to another source than the monitor's (one owner per "
    "document: e.g. a CMS webhook's beside a folder). Not compared with this source: no lag "
    "figure, never deleted_at_source; their own source's monitor measures them.",
)
FUTURE_DATED = MetricDef(
    P + "future_dated_documents", "gauge",
    "Source documents whose changed_at is after the monitor's clock (clock skew).",
)
LEFTOVER_VERSIONS = MetricDef(
    P + "leftover_versions", "gauge",
    "Chunks of non-current versions or of deleted documents still in the index.",
)
LEFTOVER_DOCUMENTS = MetricDef(
    P + "leftover_documents", "gauge", "Documents with at least one leftover chunk."
)
LEFTOVER_AGE = MetricDef(
    P + "leftover_age_seconds", "gauge",
    "Seconds since the oldest leftover chunk became one (0 when there is none).",
)
SOURCE_DOCUMENTS = MetricDef(P + "source_documents", "gauge", "Documents live at the source.")
INDEXED_DOCUMENTS = MetricDef(
    P + "indexed_documents", "gauge", "Documents live in the index (tombstones excluded)."
)
CHUNKS_EXAMINED = MetricDef(P + "chunks_examined", "gauge", "Chunks scanned by the last cycle.")
LAG_BOUND = MetricDef(
    P + "lag_bound_seconds", "gauge",
    "The configured lag bound (POLICY_INDEXER_FRESHNESS_LAG_BOUND_SECONDS); the max-lag "
    "alert compares max_lag_seconds with it.",
)
LEFTOVER_BOUND = MetricDef(
    P + "leftover_bound_seconds", "gauge",
    "The configured leftover age bound (POLICY_INDEXER_LEFTOVER_BOUND_SECONDS).",
)
LAST_SUCCESS = MetricDef(
    P + "last_success_timestamp_seconds", "gauge",
    "Unix time of the last cycle that listed the source and scanned the index.",
)
SOURCE_LAST_SUCCESS = MetricDef(
    P + "source_last_success_timestamp_seconds", "gauge",
    "Unix time of the last successful source listing (0: never).",
)
SOURCE_FAILURES = MetricDef(
    P + "source_listing_failures", "counter", "Source listings that failed, by error kind.",
    ("error",),
)
SOURCE_CONSECUTIVE_FAILURES = MetricDef(
    P + "source_listing_consecutive_failures", "gauge",
    "Source listings failed in a row (0 after a success).",
)
INDEX_FAILURES = MetricDef(
    P + "index_scan_failures", "counter", "Index scans that failed (store errors)."
)
INDEX_CONSECUTIVE_FAILURES = MetricDef(
    P + "index_scan_consecutive_failures", "gauge", "Index scans failed in a row."
)
CYCLES = MetricDef(P + "monitor_cycles", "counter", "Monitor cycles run, by result.", ("result",))
CYCLE_SECONDS = MetricDef(
    P + "monitor_cycle_seconds", "gauge", "Duration of the last cycle (listing + index scan)."
)
MONITOR_BUILD = MetricDef(
    P + "monitor_build", "info", "Version of the monitor and its source kind.",
    ("version", "source"),
)

ALL: tuple[MetricDef, ...] = (
    DOCUMENT_LAG, DOCUMENT_LAG_SERIES_DROPPED, MAX_LAG, LAG_P95, DOCUMENTS_BEHIND,
    UNREADABLE_DOCUMENTS, UNREADABLE_DOCUMENT, OTHER_OWNER_DOCUMENTS, FUTURE_DATED,
    LEFTOVER_VERSIONS, LEFTOVER_DOCUMENTS, LEFTOVER_AGE, SOURCE_DOCUMENTS, INDEXED_DOCUMENTS,
    CHUNKS_EXAMINED, LAG_BOUND, LEFTOVER_BOUND, LAST_SUCCESS, SOURCE_LAST_SUCCESS,
    SOURCE_FAILURES, SOURCE_CONSECUTIVE_FAILURES, INDEX_FAILURES, INDEX_CONSECUTIVE_FAILURES,
    CYCLES, CYCLE_SECONDS, MONITOR_BUILD,
)
