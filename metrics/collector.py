"""The monitor's custom collector: fresh metric families at every scrape.

Lags are computed here from the snapshot's start times and the scrape's clock,
so they grow between cycles. Snapshot metrics are left out until the first
successful cycle rather than reported as zeros.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from metrics import freshness_definitions as d
from metrics.monitor import FreshnessMonitor
from sources.base import UnreadableKind


def _gauge(metric: d.MetricDef, value: float | None = None) -> GaugeMetricFamily:
    if metric.labels:
        return GaugeMetricFamily(metric.name, metric.help, labels=list(metric.labels))
    return GaugeMetricFamily(metric.name, metric.help, value=value)


class FreshnessCollector(Collector):
    def __init__(
        self,
        monitor: FreshnessMonitor,
        *,
        lag_bound_seconds: float,
        leftover_bound_seconds: float,
        version: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.monitor = monitor
        self.lag_bound_seconds = lag_bound_seconds
        self.leftover_bound_seconds = leftover_bound_seconds
        self.version = version
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        status = self.monitor.status
        info = InfoMetricFamily(d.MONITOR_BUILD.name, d.MONITOR_BUILD.help)
        info.add_metric([], {"version": self.version, "source": self.monitor.source.name})
        yield info
        yield _gauge(d.LAG_BOUND, self.lag_bound_seconds)
        yield _gauge(d.LEFTOVER_BOUND, self.leftover_bound_seconds)
        failures = CounterMetricFamily(d.SOURCE_FAILURES.name, d.SOURCE_FAILURES.help,
                                       labels=["error"])
        for error in ("SourceUnavailableError", "SourceDataError"):
            failures.add_metric([error], status.source_failures.get(error, 0))
        yield failures
        yield _gauge(d.SOURCE_CONSECUTIVE_FAILURES, status.source_consecutive_failures)
        yield _gauge(d.SOURCE_LAST_SUCCESS, status.source_last_success)
        yield CounterMetricFamily(d.INDEX_FAILURES.name, d.INDEX_FAILURES.help,
                                  value=status.index_failures)
        yield _gauge(d.INDEX_CONSECUTIVE_FAILURES, status.index_consecutive_failures)
        cycles = CounterMetricFamily(d.CYCLES.name, d.CYCLES.help, labels=["result"])
        for result in ("ok", "source_failed", "index_failed", "error"):
            cycles.add_metric([result], status.cycles.get(result, 0))
        yield cycles
        yield _gauge(d.CYCLE_SECONDS, status.last_cycle_seconds)
        yield _gauge(d.LAST_SUCCESS, status.last_success)

        snapshot = self.monitor.snapshot
        if snapshot is None:
            return
        now = self.clock()
        yield _gauge(d.MAX_LAG, snapshot.max_lag_seconds(now))
        yield _gauge(d.LAG_P95, snapshot.lag_quantile_seconds(0.95, now))
        behind = _gauge(d.DOCUMENTS_BEHIND)
        for state, count in sorted(snapshot.behind_by_status.items()):
            behind.add_metric([state], count)
        yield behind
        per_document = _gauge(d.DOCUMENT_LAG)
        for lag in snapshot.most_lagging:
            per_document.add_metric([lag.document_id, lag.status.value], lag.seconds(now))
        for document_id in snapshot.current_documents:
            per_document.add_metric([document_id, "current"], 0.0)
        yield per_document
        yield _gauge(d.DOCUMENT_LAG_SERIES_DROPPED,
                     snapshot.behind - len(snapshot.most_lagging))
        unreadable = _gauge(d.UNREADABLE_DOCUMENTS)
        by_reason = snapshot.unreadable_by_reason()
        for kind in UnreadableKind:  # every reason, 0 included: a rule sees it go back to 0
            unreadable.add_metric([kind.value], by_reason.get(kind.value, 0))
        yield unreadable
        named = _gauge(d.UNREADABLE_DOCUMENT)
        cap = self.monitor.max_series
        for document_id, reason in snapshot.unreadable[:cap]:
            named.add_metric([document_id, reason], 1.0)
        yield named
        yield _gauge(d.OTHER_OWNER_DOCUMENTS, snapshot.other_owner_documents)
        yield _gauge(d.FUTURE_DATED, snapshot.future_dated)
        yield _gauge(d.LEFTOVER_VERSIONS, snapshot.leftover_versions)
        yield _gauge(d.LEFTOVER_DOCUMENTS, snapshot.leftover_documents)
        age = 0.0
        if snapshot.leftover_since is not None:
            age = max(0.0, (now - snapshot.leftover_since).total_seconds())
        yield _gauge(d.LEFTOVER_AGE, age)
        yield _gauge(d.SOURCE_DOCUMENTS, snapshot.source_documents)
        yield _gauge(d.INDEXED_DOCUMENTS, snapshot.indexed_documents)
        yield _gauge(d.CHUNKS_EXAMINED, snapshot.chunks_examined)
