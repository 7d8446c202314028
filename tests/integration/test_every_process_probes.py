"""Every long-running process answers /healthz, /readyz and /metrics on its port, 404 elsewhere.

For each process an orchestrator runs: the Kafka-mode worker,
webhook, monitor, scheduler, search server and vector backfill, and the
embedded run. Each is a real ``policy-indexer`` process against the real
services; the test waits for ``/readyz`` 200 (its dependencies answer), then
checks liveness, the Prometheus exposition with the process collectors, and
that an unknown path is a 404 (a probe of the wrong path must fail).
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.waiting import wait_until
from support.workers import CLI, Pipeline, Worker, free_port

from store.elasticsearch import ElasticsearchStore

pytestmark = [pytest.mark.services, pytest.mark.slow]

START_S = 120.0
API_KEYS = json.dumps({"probe": {"key": "probe-key-0123456789abcdef", "labels": ["public"]}})

# process -> (command, the setting of the port its probes are on, extra settings)
PROCESSES: dict[str, tuple[list[str], str, dict[str, str]]] = {
    "worker": (["run"], "metrics_port", {}),
    "webhook": (["webhook"], "webhook_port",
                {"webhook_secrets": json.dumps(["probe-webhook-secret-0123456789"])}),
    "monitor": (["monitor"], "monitor_metrics_port", {}),
    "scheduler": (["scheduler"], "scheduler_metrics_port", {}),
    # /metrics on the search port needs a token: its probes and metrics are on metrics_port
    "search": (["serve"], "metrics_port", {"search_api_keys": API_KEYS, "search_port": "0"}),
    "embed": (["embed"], "metrics_port", {}),
    "embedded run": (["run"], "metrics_port", {"pipeline": "embedded"}),
}


def get(port: int, path: str) -> tuple[int, str, str]:
    """(status, content type, body); (0, '', '') while nothing listens."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type", ""), err.read().decode()
    except OSError:
        return 0, "", ""


@pytest.fixture
def pipeline(kafka_bootstrap: str, elasticsearch_url: str, unique: str,
             tmp_path: Path) -> Iterator[Pipeline]:
    library = tmp_path / "library"
    library.mkdir()
    (library / "refunds.md").write_text("# Refunds\n\nWithin 30 days.\n")
    # The index exists, as the workers make it (the monitor is not ready without one).
    made = ElasticsearchStore.connect(elasticsearch_url, unique)
    made.ensure_ready()
    made.close()
    yield Pipeline(unique, kafka_bootstrap, elasticsearch_url, extra={
        "POLICY_INDEXER_SOURCE_KIND": "folder", "POLICY_INDEXER_SOURCE_PATH": str(library),
        "POLICY_INDEXER_SEARCH_ENCODER": "hashing",
        "POLICY_INDEXER_EMBEDDED_DIR": str(tmp_path / "embedded"),
        "POLICY_INDEXER_MONITOR_FIRST_CYCLE_WAIT_SECONDS": "0",
        "POLICY_INDEXER_MONITOR_INTERVAL_SECONDS": "1",
    })
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.delete_everything()
    store.close()


@pytest.mark.parametrize("name", list(PROCESSES))
def test_the_process_answers_both_probes_and_metrics_and_404_elsewhere(
    name: str, pipeline: Pipeline, tmp_path: Path
) -> None:
    command, port_setting, extra = PROCESSES[name]
    port = free_port()
    log = tmp_path / f"{name}.log"
    with log.open("w") as handle:
        proc = subprocess.Popen([CLI, *command], stdout=handle, stderr=subprocess.STDOUT,
                                env=pipeline.env(**{port_setting: str(port)}, **extra))
    process = Worker(proc, log)
    try:
        def ready() -> int:
            assert proc.poll() is None, f"{name} exited: {process.tail()}"
            return get(port, "/readyz")[0]

        wait_until(ready, START_S, f"{name}: /readyz 200", accept=lambda c: c == 200,
                   every_s=0.2, on_timeout=process.tail)
        code, kind, body = get(port, "/healthz")
        assert (code, kind) == (200, "application/json"), (code, kind, body)
        assert json.loads(body)["status"] in ("ok", "ready")
        code, kind, body = get(port, "/metrics")
        assert code == 200 and kind.startswith("text/plain"), (code, kind)
        assert "process_resident_memory_bytes" in body, "no process collector"
        assert "python_gc_objects_collected_total" in body, "no GC collector"
        assert "python_info" in body, "no platform collector"
        assert get(port, "/no-such-path")[0] == 404
    finally:
        assert process.stop() == 0, process.tail()
