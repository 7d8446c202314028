"""The Grafana dashboard "policy-indexer: freshness", generated from this one source.

    python deploy/grafana/dashboard.py            # rewrite dashboards/policy-indexer.json
    python deploy/grafana/dashboard.py --check    # exit 1 if the JSON is out of date

Plain dicts, no dependency: each panel is a title, a kind and its PromQL targets.
tests/integration/test_monitoring_stack.py runs every target against a real
Prometheus and requires data for each panel.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "dashboards" / "policy-indexer.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}

# (title, kind, unit, [(legend, expr, instant)], description)
Target = tuple[str, str, bool]
PANELS: list[tuple[str, str, str, list[Target], str]] = [
    ("Max lag and p95", "timeseries", "s", [
        ("max lag", "max(policy_index_max_lag_seconds)", False),
        ("p95 lag", "max(policy_index_lag_p95_seconds)", False),
        ("bound", "max(policy_index_lag_bound_seconds)", False),
    ], "How far the index is behind the source: time since the first change it lacks."),
    ("Documents behind", "timeseries", "short", [
        ("{{status}}", "sum by (status) (policy_index_documents_behind)", False),
    ], "Documents whose index copy is not the source's current version, by cause."),
    ("Most lagging documents", "table", "s", [
        ("", "topk(20, max by (document_id, status) (policy_index_document_lag_seconds))", True),
    ], "The documents furthest behind (the monitor exports the N most lagging)."),
    ("Leftover versions", "timeseries", "short", [
        ("chunks", "sum(policy_index_leftover_versions)", False),
        ("documents", "sum(policy_index_leftover_documents)", False),
    ], "Chunks of old versions or deleted documents still searchable; the sweep clears them."),
    ("Oldest leftover", "stat", "s", [
        ("age", "max(policy_index_leftover_age_seconds)", False),
    ], "Since when the oldest leftover chunk has been one."),
    ("Events per second by outcome", "timeseries", "ops", [
        ("{{outcome}}", "sum by (outcome) (rate(policy_indexer_events_total[5m]))", False),
    ], "Change events the workers handled: indexed, deleted, skipped, dead-lettered."),
    ("Dead letters (last hour)", "timeseries", "short", [
        ("{{reason}}", "sum by (reason) (increase(policy_indexer_dead_letters_total[1h]))",
         False),
    ], "Events sent to the dead-letter topic, by reason."),
    ("Kafka consumer lag", "timeseries", "short", [
        ("{{topic}}/{{partition}}",
         "sum by (topic, partition) (policy_indexer_consumer_lag_records)", False),
    ], "Records waiting in each partition of the change topic."),
    ("End-to-end latency (change at source to indexed)", "timeseries", "s", [
        ("p50", "histogram_quantile(0.5, sum by (le) "
                "(rate(policy_indexer_change_to_indexed_seconds_bucket[5m])))", False),
        ("p95", "histogram_quantile(0.95, sum by (le) "
                "(rate(policy_indexer_change_to_indexed_seconds_bucket[5m])))", False),
    ], "From the change's changed_at at the source to the worker having applied it."),
    ("Processing time per event (p95)", "timeseries", "s", [
        ("p95", "histogram_quantile(0.95, sum by (le) "
                "(rate(policy_indexer_event_processing_seconds_bucket[5m])))", False),
    ], "Chunk, write, state and delete step for one event."),
    ("Source and index documents", "timeseries", "short", [
        ("source", "max(policy_index_source_documents)", False),
        ("index", "max(policy_index_indexed_documents)", False),
    ], "Documents live at the source and in the index."),
    ("Source listing", "timeseries", "short", [
        ("failures in a row", "max(policy_index_source_listing_consecutive_failures)", False),
        ("seconds since last listing",
         "time() - max(policy_index_source_last_success_timestamp_seconds)", False),
    ], "A source that cannot be listed shows here, not as 'no lag'."),
    ("Last nightly reindex", "stat", "s", [
        ("since last success",
         "time() - max(policy_indexer_reindex_last_success_timestamp_seconds)", False),
    ], "Time since the last successful nightly reconcile and sweep (issue 7)."),
    ("Processes up", "timeseries", "short", [
        ("{{component}}", 'sum by (component) (up{component=~"worker|monitor|webhook|scheduler"})',
         False),
    ], "Scraped processes that answer, by component."),
]


def panel(number: int, spec: tuple[str, str, str, list[Target], str]) -> dict[str, Any]:
    title, kind, unit, targets, description = spec
    width = 24 if kind == "table" else 12
    out: dict[str, Any] = {
        "id": number,
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "gridPos": {"h": 8, "w": width, "x": 0 if width == 24 else 12 * (number % 2),
                    "y": 8 * number},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr,
             "legendFormat": legend, "instant": instant, "range": not instant,
             **({"format": "table"} if instant else {})}
            for i, (legend, expr, instant) in enumerate(targets)
        ],
    }
    if kind == "table":
        out["transformations"] = [{"id": "organize", "options": {
            "excludeByName": {"Time": True}, "renameByName": {"Value": "lag"}}}]
    return out


def dashboard() -> dict[str, Any]:
    return {
        "uid": "policy-indexer-freshness",
        "title": "policy-indexer: freshness",
        "tags": ["policy-indexer"],
        "timezone": "utc",
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": [{
            "name": "datasource", "type": "datasource", "query": "prometheus",
            "label": "Prometheus",
        }]},
        "panels": [panel(i, spec) for i, spec in enumerate(PANELS)],
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is out of date: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
