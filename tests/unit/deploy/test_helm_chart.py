"""The Helm chart: `helm lint --strict`, and `helm template` through `kubeconform -strict`
against the Kubernetes schemas (kubernetes-validate) and the vendored CRD schemas, for the
value sets a cluster uses; and what an SRE checks in the rendered manifests (probes,
securityContext, secrets referenced never inlined, only the webhook path exposed, one
monitor and one scheduler, the rules and dashboard from their one source)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.deploy_tools import kubernetes_schemas, tool

REPO_ROOT = Path(__file__).resolve().parents[3]
CHART = REPO_ROOT / "deploy" / "helm" / "policy-indexer"
CRD_SCHEMAS = REPO_ROOT / "deploy" / "helm" / "crd-schemas"
KUBERNETES_VERSIONS = ("1.29.0", "1.33.0")
RUNBOOKS = "https://docs.example.org/policy-indexer/runbooks.md"
# Value sets: the defaults (Kafka mode), everything optional turned on, the embedded mode.
VALUE_SETS: dict[str, list[str]] = {
    "defaults": [],
    "everything": [
        "--set", "components.webhook.ingress.enabled=true",
        "--set", "components.webhook.ingress.className=nginx",
        "--set", "components.search.enabled=true",
        "--set", "monitoring.serviceMonitor.enabled=true",
        "--set", "kafkaTopics.enabled=true",
        "--set", "secretFiles.elasticsearchPassword.secretName=es-user",
        "--set", "secretFiles.searchApiKeys.secretName=search-keys",
        "--set", f"monitoring.runbooksUrl={RUNBOOKS}",
    ],
    "embedded": ["--set", "mode=embedded"],
    # the workers under KEDA, a NetworkPolicy per component, two of every scalable process
    "scaled": [
        "--set", "autoscaling.keda.enabled=true",
        "--set", "networkPolicy.enabled=true",
        "--set", "components.search.enabled=true",
        "--set", "components.embed.replicas=2",
    ],
    "embedded-isolated": ["--set", "mode=embedded", "--set", "networkPolicy.enabled=true"],
}


def helm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tool("helm")), *args], capture_output=True, text=True,
                          check=False, timeout=120)


def render(values: list[str], kube_version: str = "1.33.0") -> str:
    result = helm("template", "pi", str(CHART), "--namespace", "policy",
                  "--kube-version", kube_version, *values)
    assert result.returncode == 0, result.stderr
    return result.stdout


def documents(values: list[str]) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(render(values)) if d]


def kubeconform(manifests: str, kube_version: str) -> subprocess.CompletedProcess[str]:
    builtin = kubernetes_schemas() / f"v{kube_version}-local-strict"
    crd = "{{ .Group }}/{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json"
    return subprocess.run(
        [str(tool("kubeconform")), "-strict", "-summary", "-kubernetes-version", kube_version,
         "-schema-location", f"{builtin}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json",
         "-schema-location", f"{CRD_SCHEMAS}/{crd}",
         "-"], input=manifests, capture_output=True, text=True, check=False, timeout=120)


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def containers(docs: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for doc in docs:
        if doc["kind"] in ("Deployment", "StatefulSet"):
            pod = doc["spec"]["template"]["spec"]
            for container in pod["containers"]:
                yield doc["metadata"]["name"], pod, container


@pytest.mark.parametrize("values", VALUE_SETS, ids=str)
def test_helm_lint_strict(values: str) -> None:
    result = helm("lint", "--strict", str(CHART), "--kube-version", "1.33.0",
                  *VALUE_SETS[values])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize("kube_version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("values", VALUE_SETS, ids=str)
def test_rendered_manifests_pass_kubeconform_strict(values: str, kube_version: str) -> None:
    result = kubeconform(render(VALUE_SETS[values], kube_version), kube_version)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Invalid: 0, Errors: 0, Skipped: 0" in result.stdout, result.stdout


def test_kubeconform_rejects_a_misspelt_field_and_an_unknown_kind() -> None:
    """The check above can fail: a field the schema lacks, and a kind with no schema."""
    manifests = render([])
    misspelt = manifests.replace("readinessProbe:", "readynessProbe:", 1)
    result = kubeconform(misspelt, "1.33.0")
    assert result.returncode == 1 and "readynessProbe" in result.stdout, result.stdout
    unknown = manifests + "\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"
    result = kubeconform(unknown, "1.33.0")
    assert result.returncode == 1 and "could not find schema for Widget" in result.stdout
    # KEDA's resources are checked against KEDA's own CRD schema, not skipped
    scaled = render(VALUE_SETS["scaled"])
    for good, bad in (("maxReplicaCount:", "maxReplicasCount:"),
                      ("secretTargetRef:", "secretTargetRefs:")):
        result = kubeconform(scaled.replace(good, bad, 1), "1.33.0")
        assert result.returncode == 1 and bad.rstrip(":") in result.stdout, result.stdout


def test_every_process_is_probed_non_root_and_read_only() -> None:
    for values in VALUE_SETS.values():
        seen = list(containers(documents(values)))
        assert seen
        for name, pod, container in seen:
            assert pod["securityContext"]["runAsNonRoot"] is True, name
            assert pod["automountServiceAccountToken"] is False, name
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["capabilities"]["drop"] == ["ALL"], name
            port = container["ports"][0]["name"]
            assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": port}
            assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": port}
            assert container["resources"]["requests"], name
            mounts = {m["mountPath"] for m in container["volumeMounts"]}
            assert {"/tmp", "/var/lib/policy-indexer"} <= mounts, name


def test_secrets_are_referenced_never_inlined() -> None:
    docs = documents(VALUE_SETS["everything"])
    assert not by_kind(docs, "Secret"), "the chart must not create Secrets"
    worker = by_kind(docs, "Deployment")["pi-policy-indexer-worker"]
    container = worker["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert env["POLICY_INDEXER_KAFKA_SASL_PASSWORD_FILE"]["value"] == (
        "/var/run/secrets/policy-indexer/kafka-sasl-password/password")
    assert env["POLICY_INDEXER_ELASTICSEARCH_PASSWORD_FILE"]["value"].endswith("/password")
    assert env["POLICY_INDEXER_SOURCE_AUTH_HEADER"]["valueFrom"]["secretKeyRef"] == {
        "name": "policy-indexer-cms", "key": "auth-header", "optional": True}
    assert "POLICY_INDEXER_WEBHOOK_SECRETS" not in env, "the webhook's secret is its own"
    webhook = by_kind(docs, "Deployment")["pi-policy-indexer-webhook"]
    webhook_pod = webhook["spec"]["template"]["spec"]
    webhook_env = {e["name"]: e for e in webhook_pod["containers"][0]["env"]}
    assert webhook_env["POLICY_INDEXER_WEBHOOK_SECRETS"]["valueFrom"]["secretKeyRef"]["name"]
    config = by_kind(docs, "ConfigMap")["pi-policy-indexer-config"]["data"]
    assert not any("PASSWORD" in k and not k.endswith("_FILE") for k in config)
    assert "@" not in config["POLICY_INDEXER_ELASTICSEARCH_URLS"], "credentials in a URL"


def test_the_ingress_exposes_the_webhook_path_only() -> None:
    ingress = by_kind(documents(VALUE_SETS["everything"]), "Ingress")
    (only,) = ingress.values()
    paths = [p for rule in only["spec"]["rules"] for p in rule["http"]["paths"]]
    assert [(p["path"], p["pathType"]) for p in paths] == [("/webhooks/", "Prefix")]
    assert paths[0]["backend"]["service"]["name"] == "pi-policy-indexer-webhook"
    assert not by_kind(documents([]), "Ingress"), "off by default"


def test_one_monitor_one_scheduler_and_a_budget_for_the_workers() -> None:
    docs = documents(VALUE_SETS["everything"])
    deployments = by_kind(docs, "Deployment")
    assert set(deployments) == {f"pi-policy-indexer-{c}" for c in
                                ("worker", "webhook", "monitor", "scheduler", "search", "embed")}
    for single in ("monitor", "scheduler"):
        spec = deployments[f"pi-policy-indexer-{single}"]["spec"]
        assert spec["replicas"] == 1 and spec["strategy"]["type"] == "Recreate"
    assert deployments["pi-policy-indexer-worker"]["spec"]["replicas"] == 3
    assert set(by_kind(docs, "PodDisruptionBudget")) == {
        "pi-policy-indexer-worker", "pi-policy-indexer-webhook", "pi-policy-indexer-search"}
    embedded = documents(VALUE_SETS["embedded"])
    assert not by_kind(embedded, "Deployment")
    (statefulset,) = by_kind(embedded, "StatefulSet").values()
    assert statefulset["spec"]["replicas"] == 1
    assert statefulset["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    # the rules' worker and monitor absence alerts count "embedded" as both
    assert statefulset["spec"]["template"]["metadata"]["labels"][
        "app.kubernetes.io/component"] == "embedded"
    config = by_kind(embedded, "ConfigMap")["pi-policy-indexer-config"]["data"]
    assert config["POLICY_INDEXER_PIPELINE"] == "embedded"


def test_the_generated_chart_files_are_in_sync_with_alerts_and_the_dashboard() -> None:
    result = subprocess.run([sys.executable, str(REPO_ROOT / "deploy/helm/generate.py"),
                             "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_the_prometheus_rule_holds_every_alert_with_an_absolute_runbook_url() -> None:
    docs = documents(VALUE_SETS["everything"])
    (rule,) = by_kind(docs, "PrometheusRule").values()
    rendered = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    source: dict[str, dict[str, Any]] = {}
    for path in sorted((REPO_ROOT / "alerts").glob("*.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            source |= {r["alert"]: r for r in group["rules"] if "alert" in r}
    assert set(rendered) == set(source)
    for name, alert in rendered.items():
        assert alert["annotations"]["runbook_url"] == f"{RUNBOOKS}#{name.lower()}"
        assert alert["expr"] == source[name]["expr"] and alert["for"] == source[name]["for"]
        # Prometheus's own templates survive Helm untouched
        assert alert["annotations"]["description"] == source[name]["annotations"]["description"]


def test_the_dashboard_configmap_is_for_the_grafana_sidecar() -> None:
    docs = documents(VALUE_SETS["everything"])
    board = by_kind(docs, "ConfigMap")["pi-policy-indexer-dashboard"]
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(board["data"]["policy-indexer.json"])
    source = json.loads((REPO_ROOT / "deploy/grafana/dashboards/policy-indexer.json").read_text())
    assert dashboard["panels"] == source["panels"]
    constant = next(v for v in dashboard["templating"]["list"] if v["name"] == "runbooks_url")
    assert constant["query"] == RUNBOOKS


def test_the_monitors_label_processes_by_component_and_topics_follow_the_settings() -> None:
    docs = documents(VALUE_SETS["everything"])
    (podmonitor,) = by_kind(docs, "PodMonitor").values()
    for endpoint in podmonitor["spec"]["podMetricsEndpoints"]:
        assert {"sourceLabels": ["__meta_kubernetes_pod_label_app_kubernetes_io_component"],
                "targetLabel": "component"} in endpoint["relabelings"]
        # the rules select job=~"policy-indexer.*" and count per namespace and job
        assert {"targetLabel": "job", "replacement": "policy-indexer/pi"} in endpoint[
            "relabelings"]
    (servicemonitor,) = by_kind(docs, "ServiceMonitor").values()
    assert {"targetLabel": "job", "replacement": "policy-indexer/pi"} in servicemonitor[
        "spec"]["endpoints"][0]["relabelings"]
    topics = {t["spec"]["topicName"]: t for t in by_kind(docs, "KafkaTopic").values()}
    assert set(topics) == {"policy.document-changes", "policy.document-changes.dead-letter"}
    for topic in topics.values():
        assert topic["metadata"]["labels"]["strimzi.io/cluster"] == "policy-kafka"
        assert topic["spec"]["replicas"] == 3
        assert topic["spec"]["config"]["min.insync.replicas"] == 2


def test_search_is_scraped_on_its_metrics_port_never_on_its_api_port() -> None:
    """The search port's /metrics is 404 without its token (it names restricted
    documents): Prometheus scrapes the search pods' metrics port instead."""
    docs = documents([*VALUE_SETS["everything"], "--set", "monitoring.podMonitor.enabled=true"])
    (search,) = [c for name, _, c in containers(docs) if name.endswith("-search")]
    assert [p["name"] for p in search["ports"]] == ["http", "metrics"]
    env = {e["name"]: e.get("value") for e in search["env"]}
    metrics_port = next(p["containerPort"] for p in search["ports"] if p["name"] == "metrics")
    assert env["POLICY_INDEXER_METRICS_PORT"] == str(metrics_port)
    (podmonitor,) = by_kind(docs, "PodMonitor").values()
    endpoints = {e["port"]: e for e in podmonitor["spec"]["podMetricsEndpoints"]}
    drop_search = {"sourceLabels": ["__meta_kubernetes_pod_label_app_kubernetes_io_component"],
                   "regex": "search", "action": "drop"}
    assert drop_search in endpoints["http"]["relabelings"]
    assert drop_search not in endpoints["metrics"]["relabelings"]
    (servicemonitor,) = by_kind(docs, "ServiceMonitor").values()
    (selects,) = servicemonitor["spec"]["selector"]["matchExpressions"]
    assert "search" not in selects["values"]


@pytest.mark.parametrize(("value", "error"), [
    ("components.worker.replica=2", "'/components/worker': additional properties 'replica'"),
    ("mode=kafak", "'/mode': value must be one of 'kafka', 'embedded'"),
    ("monitoring.runbooksUrl=docs/runbooks.md", "'/monitoring/runbooksUrl': 'docs/runbooks.md'"),
    ("config.KAFKA_TOPIC=x", "'KAFKA_TOPIC' does not match pattern '^POLICY_INDEXER_"),
])
def test_values_schema_refuses_a_misspelt_or_bad_value(value: str, error: str) -> None:
    """values.schema.json: a typo is an error naming the value, never silently ignored."""
    result = helm("template", "pi", str(CHART), "--kube-version", "1.33.0", "--set", value)
    assert result.returncode != 0
    assert error in result.stderr, result.stderr


def test_every_budget_lets_an_unhealthy_pod_go() -> None:
    """A crash-looping pod never holds a node drain (unhealthyPodEvictionPolicy)."""
    budgets = by_kind(documents(VALUE_SETS["everything"]), "PodDisruptionBudget")
    assert budgets
    for name, budget in budgets.items():
        assert budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow", name


def test_probes_and_replicas_are_the_production_defaults() -> None:
    """Readiness rides out a short retry, liveness watches the worker's heartbeat, and
    every index has a copy on another node."""
    config = by_kind(documents([]), "ConfigMap")["pi-policy-indexer-config"]["data"]
    assert float(config["POLICY_INDEXER_READINESS_GRACE_SECONDS"]) >= 30
    assert float(config["POLICY_INDEXER_LIVENESS_HEARTBEAT_SECONDS"]) > 0
    assert int(config["POLICY_INDEXER_INDEX_REPLICAS"]) >= 1


def spread_of(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    constraints: list[dict[str, Any]] = deployment["spec"]["template"]["spec"].get(
        "topologySpreadConstraints", [])
    return constraints


def test_every_multi_replica_component_spreads_over_zones_and_nodes() -> None:
    for values in ("everything", "scaled"):
        for name, deployment in by_kind(documents(VALUE_SETS[values]), "Deployment").items():
            component = deployment["spec"]["selector"]["matchLabels"][
                "app.kubernetes.io/component"]
            replicas = deployment["spec"].get("replicas")  # None: KEDA decides
            constraints = spread_of(deployment)
            if replicas is not None and replicas <= 1:
                assert not constraints, name
                continue
            assert {c["topologyKey"] for c in constraints} == {
                "topology.kubernetes.io/zone", "kubernetes.io/hostname"}, (values, name)
            for constraint in constraints:
                selector = constraint["labelSelector"]["matchLabels"]
                assert selector["app.kubernetes.io/component"] == component
                assert constraint["matchLabelKeys"] == ["pod-template-hash"]


def test_keda_scales_the_workers_on_lag_up_to_the_partitions_and_is_off_by_default() -> None:
    assert not by_kind(documents([]), "ScaledObject")
    docs = documents([*VALUE_SETS["scaled"], "--set", "kafkaTopics.partitions=6"])
    worker = by_kind(docs, "Deployment")["pi-policy-indexer-worker"]
    assert "replicas" not in worker["spec"], "KEDA owns the worker's replicas"
    (scaled,) = by_kind(docs, "ScaledObject").values()
    spec = scaled["spec"]
    assert spec["scaleTargetRef"] == {"name": "pi-policy-indexer-worker"}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (1, 6)
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "kafka"
    assert trigger["metadata"] | {"lagThreshold": "100"} == {
        "bootstrapServers": "policy-kafka-kafka-bootstrap:9093", "consumerGroup": "policy-indexer",
        "topic": "policy.document-changes", "lagThreshold": "100", "sasl": "scram_sha512",
        "tls": "enable"}
    auth = by_kind(docs, "TriggerAuthentication")[trigger["authenticationRef"]["name"]]
    assert {r["parameter"]: r["name"] for r in auth["spec"]["secretTargetRef"]} == {
        "password": "policy-indexer-kafka", "ca": "policy-kafka-cluster-ca-cert"}
    assert auth["spec"]["env"] == [{"parameter": "username", "containerName": "worker",
                                    "name": "POLICY_INDEXER_KAFKA_SASL_USERNAME"}]
    plain = documents(["--set", "autoscaling.keda.enabled=true", "--set",
                       "config.POLICY_INDEXER_KAFKA_SECURITY_PROTOCOL=PLAINTEXT"])
    (trigger,) = next(iter(by_kind(plain, "ScaledObject").values()))["spec"]["triggers"]
    assert "authenticationRef" not in trigger and trigger["metadata"]["tls"] == "disable"
    assert not by_kind(plain, "TriggerAuthentication")


def test_a_network_policy_per_component_off_by_default() -> None:
    assert not by_kind(documents([]), "NetworkPolicy")
    docs = documents(VALUE_SETS["scaled"])
    policies = by_kind(docs, "NetworkPolicy")
    assert set(policies) == {f"pi-policy-indexer-{c}" for c in
                             ("worker", "webhook", "monitor", "scheduler", "search", "embed")}
    for name, policy in policies.items():
        assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"], name
        component = name.removeprefix("pi-policy-indexer-")
        assert policy["spec"]["podSelector"]["matchLabels"][
            "app.kubernetes.io/component"] == component
        ports = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
        assert ports == ({"http", "metrics"} if component == "search"
                         else {"http"} if component == "webhook" else {"metrics"}), name
        dns = policy["spec"]["egress"][0]["ports"]
        assert {(p["port"], p["protocol"]) for p in dns} == {(53, "UDP"), (53, "TCP")}
    search = {r["ports"][0]["port"]: r["from"] for r in policies["pi-policy-indexer-search"][
        "spec"]["ingress"]}
    assert search["http"] == [{"podSelector": {}}]
    assert search["metrics"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"}
    (embedded,) = by_kind(documents(VALUE_SETS["embedded-isolated"]), "NetworkPolicy").values()
    assert embedded["metadata"]["name"] == "pi-policy-indexer-embedded"
