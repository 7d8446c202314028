"""Shared fixtures: where the real services listen, and unique names per test.

The services are started by ``deploy/local/services up`` (``scripts/test`` does
it). A test that needs one and finds it down fails with the command to run,
rather than skipping: a skipped integration test reads as a pass in CI.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPORA = REPO_ROOT.parent / "shared" / "corpora"
sys.path.insert(0, str(REPO_ROOT / "deploy" / "local"))

from devservices import health  # noqa: E402
from devservices.config import Config, load_config  # noqa: E402
from support.stores import ready_sqlite_store  # noqa: E402

from store.sqlite import SQLiteStore  # noqa: E402

UP_HINT = "start the services with `deploy/local/services up` (or run scripts/test)"


@pytest.fixture(scope="session")
def services() -> Config:
    """The local services' ports and folders, as ``deploy/local/services`` sees them."""
    return load_config(os.environ)


@pytest.fixture(scope="session")
def kafka_bootstrap(services: Config) -> str:
    if not health.kafka_ready(services.host, services.kafka_port):
        pytest.fail(f"Kafka is not answering on {services.host}:{services.kafka_port}; {UP_HINT}")
    return f"{services.host}:{services.kafka_port}"


@pytest.fixture(scope="session")
def elasticsearch_url(services: Config) -> str:
    if not health.elasticsearch_ready(services.host, services.elasticsearch_port):
        pytest.fail(
            f"Elasticsearch is not healthy on {services.host}:{services.elasticsearch_port}; "
            f"{UP_HINT}"
        )
    return f"http://{services.host}:{services.elasticsearch_port}"


@pytest.fixture(scope="session")
def prometheus_url(services: Config) -> str:
    url = f"http://{services.host}:{services.prometheus_port}"
    if not health.http_ok(f"{url}/-/ready"):
        pytest.fail(f"Prometheus is not ready at {url}; {UP_HINT}")
    _reload_rules(url)
    return url


def _reload_rules(url: str) -> None:
    """A Prometheus that was already running holds the rules of its start: reload them
    from ``alerts/`` and wait until it serves exactly the rules in the files, so the
    tests never judge yesterday's rules."""
    import json
    import urllib.request

    import yaml
    from support.waiting import wait_until

    wanted = sorted(rule["alert"] for path in (REPO_ROOT / "alerts").glob("*.yml")
                    for group in yaml.safe_load(path.read_text())["groups"]
                    for rule in group["rules"] if "alert" in rule)
    request = urllib.request.Request(f"{url}/-/reload", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass

    def loaded() -> list[str]:
        with urllib.request.urlopen(f"{url}/api/v1/rules?type=alert", timeout=10) as resp:
            groups = json.loads(resp.read())["data"]["groups"]
        return sorted(r["name"] for g in groups for r in g["rules"])

    wait_until(loaded, 30, f"Prometheus to load the rules of alerts/ {wanted}",
               accept=lambda names: names == wanted)


@pytest.fixture(scope="session")
def prometheus_targets_dir(services: Config, prometheus_url: str) -> Path:
    """Drop a file_sd JSON file here and the local Prometheus scrapes its targets."""
    return Path(services.state_dir) / "prometheus" / "targets"


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A ready, empty SQLite store in ``tmp_path/index.sqlite3``, closed after the test."""
    with ready_sqlite_store(tmp_path) as store:
        yield store


@pytest.fixture
def unique() -> str:
    """A short name no other test (or earlier run) uses: for topics, groups, indices."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def corpora_dir() -> Path:
    if not CORPORA.is_dir():
        pytest.skip(f"the policy corpora are not at {CORPORA} (they come with ../shared)")
    return CORPORA
