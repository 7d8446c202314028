"""The Grafana dashboard "policy-indexer: freshness", generated from this one source.

    python deploy/grafana/dashboard.py            # rewrite dashboards/policy-indexer.json
    python deploy/grafana/dashboard.py --check    # exit 1 if the JSON is out of date
    python deploy/grafana/dashboard.py --lag-bound-seconds 900 --out /tmp/board.json

Plain dicts, no dependency: each panel is a title, a kind, a unit and its PromQL targets,
laid out in rows on Grafana's 24-column grid. Every selector carries the dashboard's
variables (datasource, job, namespace, instance), so one board serves every deployment
(compose, VMs, Kubernetes with several namespaces). The threshold lines are the configured
bounds: by default the settings' defaults (``POLICY_INDEXER_FRESHNESS_LAG_BOUND_SECONDS``,
``..._LEFTOVER_BOUND_SECONDS``); a deployment with other bounds regenerates with the
options below. Panel links go to the runbook of the alert the panel explains, under the
``runbooks_url`` constant (the same URL the alert rules' ``runbook_url`` uses).

Unknown options are refused (argparse exits 2): the generator never rewrites the board
from a misspelt flag. tests/integration/test_monitoring_stack.py runs every target against
a real Prometheus (variables as "all") and requires data for each panel.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "dashboards" / "policy-indexer.json"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
# Every selector: the variables' regexes ("all" is ".*", which also matches a missing label,
# so the board works where there is no namespace).
SEL = 'job=~"$job", namespace=~"$namespace", instance=~"$instance"'
COMPONENTS = 'component=~"worker|monitor|webhook|scheduler|embedded|search|embed"'
# Settings' defaults (policy_indexer/settings/); the generator stays dependency-free, and
# tests/unit/deploy checks that these are still the defaults.
DEFAULT_LAG_BOUND_S = 3600.0
DEFAULT_LEFTOVER_BOUND_S = 1800.0
DEFAULT_RUNBOOKS_URL = "https://policy-indexer.example.com/docs/runbooks.md"
# alerts/embeddings.yml's bound (a number in the rule, not a setting).
VECTOR_LAG_BOUND_S = 900.0


@dataclass(frozen=True)
class Target:
    legend: str
    expr: str
    instant: bool = False


@dataclass(frozen=True)
class Panel:
    title: str
    kind: str  # timeseries, stat, table
    unit: str
    targets: list[Target]
    description: str
    width: int = 12
    threshold: float | None = None  # red at and above this value
    runbook: str | None = None  # the alert whose runbook explains the panel


@dataclass(frozen=True)
class Row:
    title: str
    panels: list[Panel] = field(default_factory=list)


def q(metric: str, extra: str = "") -> str:
    """``metric{<variables>[, extra]}``."""
    return f"{metric}{{{SEL}{', ' + extra if extra else ''}}}"


def rows(lag_bound_s: float, leftover_bound_s: float) -> list[Row]:
    def latency(p: float, name: str) -> str:
        bucket = q(f"policy_indexer_{name}_bucket")
        return f"histogram_quantile({p}, sum by (le) (rate({bucket}[5m])))"

    return [
        Row("Freshness: is the index behind the source?", [
            Panel("Max lag and p95", "timeseries", "s", [
                Target("max lag", f"max({q('policy_indexer_max_lag_seconds')})"),
                Target("p95 lag", f"max({q('policy_indexer_lag_p95_seconds')})"),
                Target("bound", f"max({q('policy_indexer_lag_bound_seconds')})"),
            ], "How far the index is behind the source: time since the first change it lacks.",
                threshold=lag_bound_s, runbook="PolicyIndexerLagAboveBound"),
            Panel("Documents behind", "timeseries", "short", [
                Target("{{status}}", f"sum by (status) ({q('policy_indexer_documents_behind')})"),
            ], "Documents whose index copy is not the source's current version, by cause.",
                runbook="PolicyIndexerLagAboveBound"),
            Panel("Most lagging documents", "table", "s", [
                Target("", "topk(20, max by (document_id, status) "
                       f"({q('policy_indexer_document_lag_seconds')}))", instant=True),
            ], "The documents furthest behind (the monitor exports the N most lagging).",
                width=24, threshold=lag_bound_s),
            Panel("Source and index documents", "timeseries", "short", [
                Target("source", f"max({q('policy_indexer_source_documents')})"),
                Target("index", f"max({q('policy_indexer_indexed_documents')})"),
            ], "Documents live at the source and in the index."),
            Panel("Source listing", "timeseries", "short", [
                Target("failures in a row",
                       f"max({q('policy_indexer_source_listing_consecutive_failures')})"),
                Target("seconds since last listing", "time() - max("
                       f"{q('policy_indexer_source_last_success_timestamp_seconds')})"),
            ], "A source that cannot be listed shows here, not as 'no lag'.", threshold=3,
                runbook="PolicyIndexerSourceListingFailing"),
        ]),
        Row("Leftovers and the nightly reindex", [
            Panel("Leftover versions", "timeseries", "short", [
                Target("chunks", f"sum({q('policy_indexer_leftover_versions')})"),
                Target("documents", f"sum({q('policy_indexer_leftover_documents')})"),
            ], "Chunks of old versions or deleted documents still searchable; the sweep "
                "clears them.", runbook="PolicyIndexerLeftoverVersions"),
            Panel("Oldest leftover", "stat", "s", [
                Target("age", f"max({q('policy_indexer_leftover_age_seconds')})"),
            ], "Since when the oldest leftover chunk has been one.", width=6,
                threshold=leftover_bound_s, runbook="PolicyIndexerLeftoverVersions"),
            Panel("Last nightly reindex", "stat", "s", [
                Target("since last success", "time() - max("
                       f"{q('policy_indexer_reindex_last_success_timestamp_seconds')})"),
            ], "Time since the last successful nightly reconcile and sweep.", width=6,
                threshold=26 * 3600, runbook="PolicyIndexerNightlyReindexNotSucceeding"),
        ]),
        Row("Workers", [
            Panel("Events per second by outcome", "timeseries", "ops", [
                Target("{{outcome}}",
                       f"sum by (outcome) (rate({q('policy_indexer_events_total')}[5m]))"),
            ], "Change events the workers handled: indexed, deleted, skipped, dead-lettered."),
            Panel("Dead letters (last hour)", "timeseries", "short", [
                Target("{{reason}}", "sum by (reason) "
                       f"(increase({q('policy_indexer_dead_letters_total')}[1h]))"),
            ], "Events sent to the dead-letter topic, by reason.",
                runbook="PolicyIndexerDeadLetters"),
            Panel("Kafka consumer lag", "timeseries", "short", [
                Target("{{topic}}/{{partition}}", "sum by (topic, partition) "
                       f"({q('policy_indexer_consumer_lag_records')})"),
            ], "Records waiting in each partition of the change topic.",
                runbook="PolicyIndexerConsumerLagGrowing"),
            Panel("Workers retrying", "timeseries", "short", [
                Target("{{instance}}", f"max by (instance) ({q('policy_indexer_retrying')})"),
            ], "1 while a worker backs off from a transient failure or Kafka is away.",
                threshold=1, runbook="PolicyIndexerWorkerRetrying"),
            Panel("End-to-end latency (change at source to indexed)", "timeseries", "s", [
                Target("p50", latency(0.5, "change_to_indexed_seconds")),
                Target("p95", latency(0.95, "change_to_indexed_seconds")),
            ], "From the change's changed_at at the source to the worker having applied it."),
            Panel("Processing time per event (p95)", "timeseries", "s", [
                Target("p95", latency(0.95, "event_processing_seconds")),
            ], "Chunk, write, state and delete step for one event."),
        ]),
        Row("Webhook and processes", [
            Panel("Webhook requests by status", "timeseries", "reqps", [
                Target("{{status}}", "sum by (status) "
                       f"(rate({q('policy_indexer_webhook_requests_total')}[5m]))"),
            ], "Requests the webhook receiver answered: 202 accepted, 401 bad signature, 503 "
                "Kafka did not acknowledge in time.", runbook="PolicyIndexerWebhookUnavailable"),
            Panel("Webhook signature failures (5 min)", "timeseries", "short", [
                Target("{{reason}}", "sum by (reason) (increase("
                       f"{q('policy_indexer_webhook_signature_failures_total')}[5m]))"),
            ], "Requests refused with 401, by reason.", threshold=10,
                runbook="PolicyIndexerWebhookSignatureFailures"),
            Panel("Processes up", "timeseries", "short", [
                Target("{{component}}", f"sum by (component) ({q('up', COMPONENTS)})"),
            ], "Scraped processes that answer, by component.", width=24,
                runbook="PolicyIndexerTargetDown"),
        ]),
        Row("Search", [
            Panel("Search latency", "timeseries", "s", [
                Target("p50", latency(0.5, "search_latency_seconds")),
                Target("p95", latency(0.95, "search_latency_seconds")),
            ], "Wall time of one search (POST /search, MCP), all interfaces.", threshold=2,
                runbook="PolicyIndexerSearchLatencyHigh"),
            Panel("Search answers by status", "timeseries", "reqps", [
                Target("{{status}}", "sum by (status) "
                       f"(rate({q('policy_indexer_search_responses_total')}[5m]))"),
            ], "ok, no_document (nothing above the threshold), no_access (only the "
                "permission filter emptied it), error (the search raised).",
                runbook="PolicyIndexerSearchErrors"),
            Panel("No-document rate", "timeseries", "percentunit", [
                Target("no_document", "sum(rate("
                       + q("policy_indexer_search_responses_total", 'status="no_document"')
                       + "[15m])) / sum(rate("
                       + q("policy_indexer_search_responses_total") + "[15m]))"),
            ], "Share of searches answered 'no document': questions the library (or the "
                "threshold) does not serve. A jump after a deploy or a model change is a "
                "regression.", width=24),
        ]),
        Row("Citations", [
            Panel("Wrong-citation rate", "timeseries", "percentunit", [
                Target("replies with a wrong citation", "sum(rate("
                       + q("policy_indexer_citation_replies_total", 'result="wrong"')
                       + "[15m])) / sum(rate("
                       + q("policy_indexer_citation_replies_total") + "[15m]))"),
            ], "Share of replies checked by check_citations with at least one citation "
                "that has a problem (support_unchecked, reported for every citation, does "
                "not count).", threshold=0.05, runbook="PolicyIndexerSupersededCitations"),
            Panel("Citation problems by code", "timeseries", "short", [
                Target("{{problem}}", "sum by (problem) (increase("
                       f"{q('policy_indexer_citation_problems_total')}[1h]))"),
            ], "Problems found in the last hour, by code: superseded (an old version), "
                "not_returned, unknown_document/clause, out_of_scope, not_valid_on_date, "
                "not_permitted, quote_not_found, number_not_in_clause.",
                runbook="PolicyIndexerSupersededCitations"),
        ]),
        Row("Vector backfill", [
            Panel("Vector lag", "timeseries", "s", [
                Target("{{instance}}",
                       f"max by (instance) ({q('policy_indexer_vector_lag_seconds')})"),
            ], "Age of the oldest live chunk still without a vector: keyword search finds it, "
                "the dense leg does not.", threshold=VECTOR_LAG_BOUND_S,
                runbook="PolicyIndexerVectorLagAboveBound"),
            Panel("Vector backlog and errors", "timeseries", "short", [
                Target("chunks waiting", f"max({q('policy_indexer_vector_backlog_chunks')})"),
                Target("failed rounds (1 h)", "sum(increase("
                       f"{q('policy_indexer_vector_backfill_errors_total')}[1h]))"),
            ], "Live chunks without a vector for the backfill's model, and backfill rounds "
                "that failed.", runbook="PolicyIndexerVectorBackfillDown"),
        ]),
    ]


def panel_json(number: int, spec: Panel, x: int, y: int) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"color": "green", "value": None}]
    if spec.threshold is not None:
        steps.append({"color": "red", "value": spec.threshold})
    defaults: dict[str, Any] = {"unit": spec.unit,
                                "thresholds": {"mode": "absolute", "steps": steps}}
    if spec.kind == "timeseries" and spec.threshold is not None:
        defaults["custom"] = {"thresholdsStyle": {"mode": "line"}}
    out: dict[str, Any] = {
        "id": number,
        "type": spec.kind,
        "title": spec.title,
        "description": spec.description,
        "datasource": DATASOURCE,
        "gridPos": {"h": 8, "w": spec.width, "x": x, "y": y},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "targets": [
            {"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": t.expr,
             "legendFormat": t.legend, "instant": t.instant, "range": not t.instant,
             **({"format": "table"} if t.instant else {})}
            for i, t in enumerate(spec.targets)
        ],
    }
    if spec.runbook:
        out["links"] = [{"title": f"Runbook: {spec.runbook}", "targetBlank": True,
                         "url": "${runbooks_url}#" + spec.runbook.lower()}]
    if spec.kind == "table":
        out["transformations"] = [{"id": "organize", "options": {
            "excludeByName": {"Time": True}, "renameByName": {"Value": "lag"}}}]
    return out


def layout(board_rows: list[Row]) -> list[dict[str, Any]]:
    """Rows of panels on the 24-column grid: left to right, wrapping, no gaps or overlaps."""
    panels: list[dict[str, Any]] = []
    y, number = 0, 1
    for row in board_rows:
        panels.append({"id": number, "type": "row", "title": row.title, "collapsed": False,
                       "panels": [], "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}})
        number += 1
        y += 1
        x = 0
        for spec in row.panels:
            if x + spec.width > 24:
                x, y = 0, y + 8
            panels.append(panel_json(number, spec, x, y))
            number += 1
            x += spec.width
        y += 8
    return panels


def variable(name: str, label: str, metric: str) -> dict[str, Any]:
    return {"name": name, "label": label, "type": "query", "datasource": DATASOURCE,
            "query": {"query": f"label_values({metric}, {name})", "refId": f"{name}-values"},
            "definition": f"label_values({metric}, {name})", "refresh": 2, "sort": 1,
            "multi": True, "includeAll": True, "allValue": ".*",
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]}}


def dashboard(lag_bound_s: float = DEFAULT_LAG_BOUND_S,
              leftover_bound_s: float = DEFAULT_LEFTOVER_BOUND_S,
              runbooks_url: str = DEFAULT_RUNBOOKS_URL) -> dict[str, Any]:
    up = f"up{{{COMPONENTS}}}"
    return {
        "uid": "policy-indexer-freshness",
        "title": "policy-indexer: freshness",
        "tags": ["policy-indexer"],
        "timezone": "utc",
        "schemaVersion": 39,
        "version": 2,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "links": [{"title": "Runbooks", "type": "link", "url": "${runbooks_url}",
                   "targetBlank": True, "icon": "doc"}],
        "templating": {"list": [
            {"name": "datasource", "type": "datasource", "query": "prometheus",
             "label": "Prometheus"},
            variable("job", "Job", up),
            variable("namespace", "Namespace", up),
            variable("instance", "Instance",
                     f'up{{{COMPONENTS}, job=~"$job", namespace=~"$namespace"}}'),
            {"name": "runbooks_url", "type": "constant", "hide": 2, "query": runbooks_url,
             "label": "Runbooks"},
        ]},
        "panels": layout(rows(lag_bound_s, leftover_bound_s)),
    }


def render(lag_bound_s: float = DEFAULT_LAG_BOUND_S,
           leftover_bound_s: float = DEFAULT_LEFTOVER_BOUND_S,
           runbooks_url: str = DEFAULT_RUNBOOKS_URL) -> str:
    board = dashboard(lag_bound_s, leftover_bound_s, runbooks_url)
    return json.dumps(board, indent=2, ensure_ascii=False) + "\n"


def positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text!r}")
    return value


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="dashboard.py", description="Generate the policy-indexer Grafana dashboard.",
        allow_abbrev=False)  # "--lag-bound" is not silently "--lag-bound-seconds"
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the output file differs from what would be written")
    parser.add_argument("--out", type=Path, default=OUT, help=f"output file (default {OUT})")
    parser.add_argument("--lag-bound-seconds", type=positive, default=DEFAULT_LAG_BOUND_S,
                        help="POLICY_INDEXER_FRESHNESS_LAG_BOUND_SECONDS of the deployment")
    parser.add_argument("--leftover-bound-seconds", type=positive,
                        default=DEFAULT_LEFTOVER_BOUND_S,
                        help="POLICY_INDEXER_LEFTOVER_BOUND_SECONDS of the deployment")
    parser.add_argument("--runbooks-url", default=DEFAULT_RUNBOOKS_URL,
                        help="where docs/runbooks.md is served (the panels' runbook links)")
    args = parser.parse_args(argv)  # exits 2 on an unknown option, writes nothing
    if not args.runbooks_url.startswith(("https://", "http://")):
        parser.error(f"--runbooks-url must be an absolute http(s) URL, got {args.runbooks_url!r}")
    text = render(args.lag_bound_seconds, args.leftover_bound_seconds, args.runbooks_url)
    if args.check:
        if not args.out.exists() or args.out.read_text(encoding="utf-8") != text:
            print(f"{args.out} is out of date: run python {Path(__file__).name}",
                  file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
