"""The dashboard JSON is generated from its one source, and every metric the dashboard and
the alert rules name is one a policy-indexer process exports (catches typos before Grafana)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry

from embeddings.metrics import EmbeddingMetrics
from metrics import freshness_definitions
from metrics.definitions import ReindexMetrics, WorkerMetrics
from retrieval.metrics import CitationMetrics, RunLogMetrics, SearchMetrics
from webhooks.metrics import WebhookMetrics

REPO_ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = REPO_ROOT / "deploy" / "grafana" / "dashboards" / "policy-indexer.json"
NAME = re.compile(r"\bpolicy_indexer_[a-z0-9_]+")


def exported_names() -> set[str]:
    registry = CollectorRegistry()
    WorkerMetrics.create(registry)
    WebhookMetrics.create(registry)
    ReindexMetrics.create(registry)
    EmbeddingMetrics.create(registry)
    SearchMetrics.create(registry)
    RunLogMetrics.create(registry)
    CitationMetrics.create(registry)
    families = list(registry.collect())
    names = {s.name for m in families for s in m.samples}
    # labelled, no child yet: the family has no sample, its name is still exported
    names |= {m.name for m in families if m.type == "gauge"}
    names |= {m.name + "_total" for m in families if m.type == "counter"}
    names |= {m.name + suffix for m in families if m.type == "histogram"
              for suffix in ("_bucket", "_count", "_sum")}
    for metric in freshness_definitions.ALL:
        suffix = {"counter": "_total", "info": "_info", "gauge": ""}[metric.kind]
        names.add(metric.name + suffix)
    return names


def test_the_dashboard_json_is_what_dashboard_py_generates() -> None:
    result = subprocess.run([sys.executable, str(REPO_ROOT / "deploy/grafana/dashboard.py"),
                             "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_every_metric_named_in_the_dashboard_and_rules_is_exported() -> None:
    exprs = [t["expr"] for p in json.loads(DASHBOARD.read_text())["panels"]
             for t in p.get("targets", [])]
    for path in (REPO_ROOT / "alerts").glob("*.yml"):
        for group in yaml.safe_load(path.read_text())["groups"]:
            exprs += [rule["expr"] for rule in group["rules"]]
    named = {name for expr in exprs for name in NAME.findall(expr)}
    assert named, "no policy_indexer_* metric found in the dashboard or rules"
    unknown = named - exported_names()
    assert not unknown, f"named but never exported: {sorted(unknown)}"
