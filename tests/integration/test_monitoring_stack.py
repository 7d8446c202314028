"""Real Prometheus scraping a real worker and monitor: alerts fire and resolve, panels have data.

One stack per module (worker + monitor processes, a change-log source, a unique
topic, group and index prefix); the tests run in file order and each leaves it
running for the next. Every series and alert carries ``test=<unique>``.
Settings for speed: monitor cycle 1 s, lag bound 5 s, leftover bound 3 s.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from support.kafka_admin import delete_topics
from support.kafka_helpers import publish_events
from support.monitoring import CLI, Process, Prometheus, free_port, wait_for
from support.waiting import wait_until

from events.changelog import event_from_line
from store.elasticsearch import ElasticsearchStore
from transport.kafka import ensure_topics

pytestmark = [pytest.mark.services, pytest.mark.slow]
REPO_ROOT = Path(__file__).resolve().parents[2]
LAG_BOUND_S = 5


@dataclass
class Stack:
    test: str
    env: dict[str, str]
    log: Path
    topic: str
    bootstrap: str
    worker: Process
    monitor: Process
    prometheus: Prometheus
    workdir: Path
    targets_dir: Path
    seq: int = 0

    def change(self, document_id: str, version: int, *, action: str = "upsert",
               changed_at: datetime | None = None) -> None:
        """Append a change to the source's log and send its event, as the CMS would."""
        self.seq += 1
        record: dict[str, object] = {
            "seq": self.seq, "document_id": document_id, "path": f"{document_id}.md",
            "action": action, "version": version, "commit": "test",
            "changed_at": (changed_at or datetime.now(UTC)).isoformat(),
        }
        if action == "upsert":
            record["content"] = f"# {document_id}\n\n## Rules\n\nVersion {version} of the rules.\n"
        with self.log.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        publish_events(self.bootstrap, self.topic, [event_from_line(record, self.test)])

    def worker_process(self, **extra_env: str) -> Process:
        env = {**self.env, "POLICY_INDEXER_METRICS_PORT": str(self.worker.port), **extra_env}
        return Process(["run"], env, component="worker", test=self.test,
                       targets_dir=self.targets_dir, log_path=self.workdir / "worker.log",
                       port=self.worker.port)

    def sample(self, metric: str, **labels: str) -> float | None:
        selector = ",".join([f'test="{self.test}"', *(f'{k}="{v}"' for k, v in labels.items())])
        return self.prometheus.value(f"{metric}{{{selector}}}")

    def firing(self, alert: str) -> list[dict[str, object]]:
        return [a for a in self.prometheus.alerts(alert, self.test) if a["state"] == "firing"]

    def logs(self) -> str:
        return f"\nworker:\n{self.worker.tail()}\nmonitor:\n{self.monitor.tail()}"


@pytest.fixture(scope="module")
def stack(
    kafka_bootstrap: str, elasticsearch_url: str, prometheus_url: str,
    prometheus_targets_dir: Path, tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Stack]:
    test = f"t{uuid.uuid4().hex[:12]}"
    workdir = tmp_path_factory.mktemp("monitoring")
    topic, dlq = f"{test}-changes", f"{test}-dlq"
    ensure_topics(kafka_bootstrap, [topic, dlq], partitions=1)
    env = {
        "POLICY_INDEXER_PIPELINE": "kafka",
        "POLICY_INDEXER_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "POLICY_INDEXER_KAFKA_TOPIC": topic,
        "POLICY_INDEXER_KAFKA_DEAD_LETTER_TOPIC": dlq,
        "POLICY_INDEXER_KAFKA_GROUP_ID": f"{test}-group",
        "POLICY_INDEXER_KAFKA_PARTITIONS": "1",
        "POLICY_INDEXER_KAFKA_SESSION_TIMEOUT_MS": "6000",
        "POLICY_INDEXER_COMMIT_EVERY_SECONDS": "0.2",
        "POLICY_INDEXER_ELASTICSEARCH_URL": elasticsearch_url,
        "POLICY_INDEXER_INDEX_PREFIX": test,
        "POLICY_INDEXER_SOURCE_KIND": "changelog",
        "POLICY_INDEXER_SOURCE_PATH": str(workdir / "source.jsonl"),
        "POLICY_INDEXER_MONITOR_INTERVAL_SECONDS": "1",
        "POLICY_INDEXER_FRESHNESS_LAG_BOUND_SECONDS": str(LAG_BOUND_S),
        "POLICY_INDEXER_LEFTOVER_BOUND_SECONDS": "3",
        "POLICY_INDEXER_SWEEP_GRACE_SECONDS": "0",
    }
    worker_port, monitor_port = free_port(), free_port()
    worker = Process(["run"], {**env, "POLICY_INDEXER_METRICS_PORT": str(worker_port)},
                     component="worker", test=test, targets_dir=prometheus_targets_dir,
                     log_path=workdir / "worker.log", port=worker_port)
    monitor_env = {**env, "POLICY_INDEXER_MONITOR_METRICS_PORT": str(monitor_port)}
    monitor = Process(["monitor"], monitor_env,
                      component="monitor", test=test, targets_dir=prometheus_targets_dir,
                      log_path=workdir / "monitor.log", port=monitor_port)
    s = Stack(test, env, workdir / "source.jsonl", topic, kafka_bootstrap, worker, monitor,
              Prometheus(prometheus_url), workdir, prometheus_targets_dir)
    s.log.touch()
    day_ago = datetime.now(UTC) - timedelta(days=1)
    try:
        for document_id in ("refund", "terms", "privacy"):
            s.change(document_id, 1, changed_at=day_ago)
        worker.start()  # creates the indices
        monitor.start()
        wait_for("the monitor to see the three documents indexed, current",
                 lambda: s.sample("policy_indexer_indexed_documents") == 3
                 and s.sample("policy_indexer_max_lag_seconds") == 0, 90, on_timeout=s.logs)
        yield s
    finally:
        s.monitor.stop()
        s.worker.stop()
        delete_topics(kafka_bootstrap, [topic, dlq])
        store = ElasticsearchStore.connect(elasticsearch_url, test)
        try:
            store.delete_everything()
            # the reindex's run log and lease indices, by name (no wildcard deletes)
            for name in store.client.indices.get(index=f"{test}-*"):
                store.client.indices.delete(index=name)
        finally:
            store.close()


def test_max_lag_alert_fires_while_the_worker_is_stopped_and_resolves_after(stack: Stack) -> None:
    stack.worker.stop()
    stack.change("refund", 2)
    wait_for("PolicyIndexerLagAboveBound to fire",
             lambda: stack.firing("PolicyIndexerLagAboveBound"), 60, on_timeout=stack.logs)
    lag = stack.sample("policy_indexer_document_lag_seconds", document_id="refund")
    assert lag is not None and lag > LAG_BOUND_S
    assert stack.sample("policy_indexer_documents_behind", status="behind") == 1

    stack.worker = stack.worker_process().start()
    wait_for("the lag alert to resolve",
             lambda: not stack.prometheus.alerts("PolicyIndexerLagAboveBound", stack.test),
             60, on_timeout=stack.logs)
    assert stack.sample("policy_indexer_max_lag_seconds") == 0


def _panel_targets() -> list[tuple[str, str]]:
    """Every panel's queries, its variables (job, namespace, instance) set to "all"."""
    board = json.loads((REPO_ROOT / "deploy/grafana/dashboards/policy-indexer.json").read_text())
    return [(p["title"], re.sub(r"\$(job|namespace|instance)\b", ".*", t["expr"]))
            for p in board["panels"] for t in p.get("targets", [])]


def _rule_exprs() -> list[tuple[str, str]]:
    out = []
    for path in sorted((REPO_ROOT / "alerts").glob("*.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            out += [(r.get("alert") or r["record"], r["expr"]) for r in group["rules"]]
    return out


HISTOGRAM_COUNTS = ("policy_indexer_event_processing_seconds_count",
                    "policy_indexer_change_to_indexed_seconds_count")


def histogram_counts(stack: Stack) -> tuple[dict[str, float], dict[str, float | None]]:
    """The worker's latency histograms' counts: in its /metrics now, and as Prometheus last
    scraped them."""
    here = {s.name: s.value for family in text_string_to_metric_families(
                stack.worker.metrics_text())
            for s in family.samples if s.name in HISTOGRAM_COUNTS}
    scraped = {name: stack.sample(name, component="worker") for name in HISTOGRAM_COUNTS}
    return here, scraped


def test_every_dashboard_and_rule_expression_runs_and_every_panel_has_data(
    stack: Stack,
) -> None:
    # The latency panels are rate()s of histograms: they show data only if Prometheus sees
    # the counts go up. Events the worker handles before its first scrape are in the first
    # sample and show no increase (seen on a loaded machine: an empty p95 panel). So feed
    # the events only once Prometheus holds the worker's current counts.
    wait_until(lambda: histogram_counts(stack), 60,
               "Prometheus to hold the worker's current histogram counts",
               every_s=0.5, accept=lambda counts: counts[0] == counts[1],
               on_timeout=stack.logs)
    # a poison event, so the dead-letter panel has something real to show
    publish_events(stack.bootstrap, stack.topic, [(b"refund", b"{not json")])
    stack.change("privacy", 2)
    wait_for("the dead letter to be scraped",
             lambda: stack.sample("policy_indexer_dead_letters_total", reason="not_json") == 1,
             60, on_timeout=stack.logs)
    # a reconcile by hand, recorded in the run log; the scheduler exports its time
    reindex = subprocess.run([*CLI, "reindex"], env={**os.environ, **stack.env},
                             cwd=stack.workdir, capture_output=True, text=True, timeout=120,
                             check=False)
    assert reindex.returncode == 0, reindex.stdout + reindex.stderr
    port = free_port()
    scheduler = Process(["scheduler"], {**stack.env, "POLICY_INDEXER_SCHEDULER_METRICS_PORT":
                                        str(port)}, component="scheduler", test=stack.test,
                        targets_dir=stack.targets_dir, log_path=stack.workdir / "scheduler.log",
                        port=port).start()
    # the webhook receiver, and one unsigned request: the webhook panels' series (a 401)
    webhook_port = free_port()
    webhook = Process(["webhook"], {**stack.env, "POLICY_INDEXER_WEBHOOK_PORT": str(webhook_port),
                                    "POLICY_INDEXER_WEBHOOK_SECRETS": '["0123456789abcdef-test"]'},
                      component="webhook", test=stack.test, targets_dir=stack.targets_dir,
                      log_path=stack.workdir / "webhook.log", port=webhook_port).start()
    unsigned = urllib.request.Request(f"http://127.0.0.1:{webhook_port}/webhooks/cms",
                                      data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(unsigned, timeout=10)
    assert refused.value.code == 401
    # the search server and the vector backfill: the Search and Vector backfill rows
    search, backfill = _search_and_backfill(stack)
    try:
        _every_expression_runs_and_every_panel_has_data(stack)
    finally:
        scheduler.stop()  # before its hourly sweep could clear the next test's leftovers
        webhook.stop()
        search.stop()
        backfill.stop()


SEARCH_KEY = "monitoring-key-0123456789abcdef"


def _search_and_backfill(stack: Stack) -> tuple[Process, Process]:
    """``serve`` (scraped on its metrics port) answering an ok-or-no_document question and
    a no_document one, and checking a wrong citation, after Prometheus has seen its first
    search and check (a rate needs an increase), and ``embed`` (vector lag and backlog)."""
    metrics_port, search_port, embed_port = free_port(), free_port(), free_port()
    keys = json.dumps({"monitoring": {"key": SEARCH_KEY, "labels": ["public"]}})
    search = Process(["serve"], {**stack.env, "POLICY_INDEXER_METRICS_PORT": str(metrics_port),
                                 "POLICY_INDEXER_SEARCH_PORT": str(search_port),
                                 "POLICY_INDEXER_SEARCH_API_KEYS": keys},
                     component="search", test=stack.test, targets_dir=stack.targets_dir,
                     log_path=stack.workdir / "search.log", port=metrics_port).start()
    backfill = Process(["embed"], {**stack.env, "POLICY_INDEXER_METRICS_PORT": str(embed_port)},
                       component="embed", test=stack.test, targets_dir=stack.targets_dir,
                       log_path=stack.workdir / "embed.log", port=embed_port).start()

    def ask(question: str) -> None:
        request = urllib.request.Request(
            f"http://127.0.0.1:{search_port}/search", method="POST",
            data=json.dumps({"question": question}).encode(),
            headers={"Authorization": f"Bearer {SEARCH_KEY}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200

    def check_a_wrong_citation() -> None:  # the Citations row: a reply citing no document
        request = urllib.request.Request(
            f"http://127.0.0.1:{search_port}/citations/check", method="POST",
            data=json.dumps({"citations": [{"document_id": "no-such-policy",
                                            "clause": "1"}]}).encode(),
            headers={"Authorization": f"Bearer {SEARCH_KEY}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200

    ask("refund policy")
    check_a_wrong_citation()
    count = f'sum(policy_indexer_search_latency_seconds_count{{test="{stack.test}"}})'
    checks = f'sum(policy_indexer_citation_replies_total{{test="{stack.test}"}})'
    wait_for("Prometheus to hold the first search and citation check",
             lambda: (stack.prometheus.value(count) or 0) >= 1
             and (stack.prometheus.value(checks) or 0) >= 1, 60, on_timeout=search.tail)
    for question in ("refund policy", "zebra quantum xylophone harbour", "terms"):
        ask(question)
    check_a_wrong_citation()
    return search, backfill


def _every_expression_runs_and_every_panel_has_data(stack: Stack) -> None:
    for name, expr in _rule_exprs():
        try:
            stack.prometheus.query(expr)
        except AssertionError as exc:
            raise AssertionError(f"rule {name}: {exc}") from exc

    def empty_panels() -> list[str]:
        empty = []
        for title, expr in _panel_targets():
            result = stack.prometheus.query(expr)
            values = [float(r["value"][1]) for r in result]
            if not values or all(math.isnan(v) for v in values):
                empty.append(f"{title}: {expr}")
        return empty

    def counts() -> object:  # to diagnose an empty latency panel
        selector = f'{{test="{stack.test}"}}[5m]'
        return [stack.prometheus.get("/api/v1/query", query=f"{name}_count{selector}")
                for name in ("policy_indexer_event_processing_seconds",
                             "policy_indexer_change_to_indexed_seconds")]

    wait_for("every panel to have data", lambda: not empty_panels(), 45,
             on_timeout=lambda: f"empty: {empty_panels()}; histogram counts: {counts()}")


def test_leftover_versions_show_and_alert_then_the_sweep_clears_them(stack: Stack) -> None:
    stack.worker.stop()
    # This worker SIGKILLs itself after writing the new version's chunks and state,
    # before its delete step: terms@v1's chunks stay behind.
    doomed = stack.worker_process(TEST_FAULT_KILL_AT="after-state-write:1").start()
    stack.change("terms", 2)
    assert doomed.wait_exit(60) != 0, doomed.tail()
    doomed.stop()
    wait_for("leftover versions to show", lambda: (stack.sample("policy_indexer_leftover_versions")
                                                   or 0) > 0, 60, on_timeout=stack.logs)
    assert stack.sample("policy_indexer_leftover_documents") == 1
    wait_for("PolicyIndexerLeftoverVersions to fire",
             lambda: stack.firing("PolicyIndexerLeftoverVersions"), 60, on_timeout=stack.logs)

    sweep = subprocess.run([*CLI, "sweep", "--grace-seconds", "0"], env={**os.environ, **stack.env},
                           cwd=stack.workdir, capture_output=True, text=True, timeout=120,
                           check=False)
    assert sweep.returncode == 0, sweep.stdout + sweep.stderr
    assert "older:" in sweep.stdout, sweep.stdout
    wait_for("the leftover gauge to clear",
             lambda: stack.sample("policy_indexer_leftover_versions") == 0, 60)
    wait_for("the leftover alert to resolve",
             lambda: not stack.prometheus.alerts("PolicyIndexerLeftoverVersions", stack.test), 60)
    stack.worker = stack.worker_process().start()


def test_monitor_once_prints_the_cycle_and_fails_clearly_without_a_source(stack: Stack) -> None:
    env = {**os.environ, **stack.env}
    once = subprocess.run([*CLI, "monitor", "--once"], env=env, cwd=stack.workdir,
                          capture_output=True, text=True, timeout=60, check=False)
    assert once.returncode == 0, once.stdout + once.stderr
    assert "source documents:  3" in once.stdout, once.stdout
    assert "max lag:           0 s" in once.stdout, once.stdout
    env["POLICY_INDEXER_SOURCE_PATH"] = str(stack.workdir / "no-such-log.jsonl")
    failed = subprocess.run([*CLI, "monitor", "--once"], env=env, cwd=stack.workdir,
                            capture_output=True, text=True, timeout=60, check=False)
    assert failed.returncode == 1
    assert "source listing failed" in failed.stderr and "no-such-log.jsonl" in failed.stderr


def test_an_unlistable_source_fires_its_alert_instead_of_reading_as_no_lag(stack: Stack) -> None:
    hidden = stack.log.with_name("moved-away.jsonl")
    stack.log.rename(hidden)
    try:
        wait_for("PolicyIndexerSourceListingFailing to fire",
                 lambda: stack.firing("PolicyIndexerSourceListingFailing"), 60,
                 on_timeout=stack.logs)
        failures = stack.sample("policy_indexer_source_listing_failures_total",
                                error="SourceUnavailableError")
        assert failures is not None and failures >= 3
        # the last good snapshot is still served (not dropped, not reset)
        assert stack.sample("policy_indexer_indexed_documents") == 3
    finally:
        hidden.rename(stack.log)
    wait_for("the listing alert to resolve",
             lambda: not stack.prometheus.alerts("PolicyIndexerSourceListingFailing",
                                                 stack.test), 60)
