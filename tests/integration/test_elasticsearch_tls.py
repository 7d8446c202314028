"""Elasticsearch through TLS and basic auth, for real.

The shared Elasticsearch has no security module, so each test puts a
TLS-terminating proxy with basic auth in front of it (``support.tls_proxy``),
with a CA and a server certificate made in the test (``support.certificates``).
The code under test is given only the proxy's URL, so every request it makes
crosses the proxy (its counts prove it); the direct URL is used only to clean
up. Wrong credentials and wrong CAs must give one clear line naming the node
and the setting, with no traceback and no password.
"""

from __future__ import annotations

import base64
import http.client
import os
import socket
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from support.certificates import Authority, Issued, self_signed_server
from support.kafka_admin import delete_topics
from support.kafka_helpers import publish_events
from support.reindex_library import Library
from support.tls_proxy import TlsAuthProxy
from support.waiting import wait_until
from support.workers import CLI, Pipeline, free_port, healthz, readyz

from analysis.terms import query_terms
from indexing.core import Indexer
from policy_indexer.runtime.backends import open_elasticsearch
from policy_indexer.settings import Settings
from store.elasticsearch import ElasticsearchStore
from store.errors import StoreAccessError, StoreError, TransientStoreError
from store.es_search import ElasticsearchSearchIndex
from store.search_index import SearchFilters
from transport.kafka import ensure_topics

pytestmark = pytest.mark.services

USER = "elastic"
PASSWORD = "s3cret-Pa55word"  # a string no message may ever contain


@dataclass(frozen=True)
class Certificates:
    ca: Authority
    server: Issued
    other_ca: Authority
    self_signed: Issued


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    folder = tmp_path_factory.mktemp("tls")
    ca = Authority.create(folder / "ca")
    return Certificates(ca, ca.issue_server(folder / "ca"),
                        Authority.create(folder / "other", "another CA"),
                        self_signed_server(folder / "self"))


def upstream(elasticsearch_url: str) -> tuple[str, int]:
    parts = urlsplit(elasticsearch_url)
    return parts.hostname or "127.0.0.1", parts.port or 9200


@pytest.fixture
def proxy(certs: Certificates, elasticsearch_url: str) -> Iterator[TlsAuthProxy]:
    """The secured node: the test CA's certificate (sent with its chain), elastic/PASSWORD."""
    with TlsAuthProxy(upstream(elasticsearch_url), certs.server.chain, certs.server.key,
                      username=USER, password=PASSWORD) as secured:
        yield secured


@pytest.fixture
def password_file(tmp_path: Path) -> Path:
    path = tmp_path / "secrets" / "elasticsearch-password"
    path.parent.mkdir()
    path.write_text(PASSWORD + "\n")  # a mounted secret often ends with a newline
    return path


@pytest.fixture
def cleanup(elasticsearch_url: str, unique: str) -> Iterator[None]:
    """Remove what the test made, directly (not through the proxy)."""
    yield
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.delete_everything()
    store.client.options(ignore_status=404).indices.delete(index=f"{unique}-*")
    store.close()


@dataclass(frozen=True)
class Secured:
    """The secured node and what a client needs to reach it (the CA, a password file)."""

    proxy: TlsAuthProxy
    certs: Certificates
    password_file: Path
    unique: str

    def settings(self, **values: Any) -> Settings:
        """Settings that reach Elasticsearch only through the proxy, with the CA file."""
        values = {"elasticsearch_url": self.proxy.url, "elasticsearch_username": USER,
                  "elasticsearch_password_file": self.password_file,
                  "elasticsearch_ca_file": self.certs.ca.files.cert, **values}
        return settings_for(self.unique, **values)


@pytest.fixture
def secured(proxy: TlsAuthProxy, certs: Certificates, password_file: Path, unique: str,
            cleanup: None) -> Secured:
    return Secured(proxy, certs, password_file, unique)


def settings_for(unique: str, **values: Any) -> Settings:
    return Settings(_env_file=None, pipeline="kafka", index_prefix=unique, **values)


def dead_port() -> int:
    """A loopback port nothing listens on (bound, then closed): connections are refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def index_and_search(store: ElasticsearchStore, library: Library) -> None:
    """ensure_ready, index (the worker's own apply), search, delete: all through ``store``."""
    store.ensure_ready()
    indexer = Indexer(store)
    for event in library.events:
        indexer.apply_one(event)
    store.refresh()
    assert {s.document_id for s in store.iter_states()} == {"refunds", "exchanges"}
    refunds = list(store.find_chunks("refunds"))
    assert {c.version for c in refunds} == {2}, refunds  # v1 removed by the delete step
    hits = ElasticsearchSearchIndex(store).keyword_search(
        query_terms("refunds for exchanges take days", ["en"]),
        SearchFilters(date(2026, 6, 1), caller_labels=None), 10)
    assert {h.chunk.document_id for h in hits} == {"refunds", "exchanges"}, hits
    assert store.delete_chunks([c.chunk_id for c in refunds]) == len(refunds)
    store.refresh()
    assert list(store.find_chunks("refunds")) == []


def small_library(tmp_path: Path) -> Library:
    library = Library(tmp_path / "changes.jsonl")
    library.upsert("refunds", 1)
    library.upsert("refunds", 2)
    library.upsert("exchanges", 1)
    library.write()
    return library


def test_the_store_works_through_tls_with_the_ca_file_and_a_password_file(
    tmp_path: Path, secured: Secured
) -> None:
    proxy = secured.proxy
    store = open_elasticsearch(secured.settings())
    try:
        index_and_search(store, small_library(tmp_path))
    finally:
        store.close()
    assert proxy.counts.refused == 0
    assert proxy.counts.forwarded >= 10, proxy.counts
    assert proxy.counts.handshake_failures == 0


def test_the_store_works_with_the_ca_fingerprint_instead_of_a_file(
    tmp_path: Path, secured: Secured
) -> None:
    proxy = secured.proxy
    store = open_elasticsearch(secured.settings(
        elasticsearch_ca_file=None,
        elasticsearch_ca_fingerprint=secured.certs.ca.files.fingerprint))
    try:
        index_and_search(store, small_library(tmp_path))
    finally:
        store.close()
    assert proxy.counts.forwarded >= 10 and proxy.counts.refused == 0, proxy.counts


def test_a_dead_first_node_is_skipped_for_the_next_one(
    tmp_path: Path, secured: Secured
) -> None:
    proxy = secured.proxy
    dead = f"https://127.0.0.1:{dead_port()}"
    store = open_elasticsearch(secured.settings(elasticsearch_urls=f"{dead},{proxy.url}"))
    try:
        index_and_search(store, small_library(tmp_path))
        for _ in range(20):  # every request answered, whichever node the client tries first
            assert store.get_state("exchanges") is not None
    finally:
        store.close()
    assert proxy.counts.refused == 0


def test_only_a_dead_node_is_transient_not_an_access_error(
    certs: Certificates, unique: str
) -> None:
    store = ElasticsearchStore.connect([f"https://127.0.0.1:{dead_port()}",
                                        f"https://localhost:{dead_port()}"], unique,
                                       basic_auth=(USER, PASSWORD),
                                       ca_file=str(certs.ca.files.cert), timeout_s=5)
    with pytest.raises(TransientStoreError) as caught:
        store.ensure_ready()
    assert not isinstance(caught.value, StoreAccessError)


@pytest.mark.parametrize(("shards", "replicas"), [(2, 0), (1, 0)])
def test_index_shards_and_replicas_come_from_the_settings(
    secured: Secured, shards: int, replicas: int
) -> None:
    store = open_elasticsearch(secured.settings(index_shards=shards, index_replicas=replicas))
    try:
        store.ensure_ready()
        for alias in (store.names.chunks, store.names.states):
            index = store.names.first_index(alias)
            got = store.client.indices.get_settings(index=index)[index]["settings"]["index"]
            assert (got["number_of_shards"], got["number_of_replicas"]) == (
                str(shards), str(replicas)), got
            template = store.client.indices.get_index_template(name=alias)
            tsettings = template["index_templates"][0]["index_template"]["template"]["settings"]
            assert tsettings["index"]["number_of_shards"] == str(shards), tsettings
    finally:
        store.close()


# -- wrong credentials, wrong CA --------------------------------------------------------

def cli(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    environ.update(env)
    return subprocess.run([CLI, *command], env=environ, capture_output=True, text=True,
                          timeout=120, check=False)


def cli_env(unique: str, url: str, tmp_path: Path, **more: str) -> dict[str, str]:
    library = small_library(tmp_path)
    return {
        "POLICY_INDEXER_PIPELINE": "kafka",
        "POLICY_INDEXER_ELASTICSEARCH_URL": url,
        "POLICY_INDEXER_INDEX_PREFIX": unique,
        "POLICY_INDEXER_SOURCE_KIND": "changelog",
        "POLICY_INDEXER_SOURCE_PATH": str(library.path),
        "POLICY_INDEXER_LOG_LEVEL": "WARNING",
        **{f"POLICY_INDEXER_{k.upper()}": v for k, v in more.items()},
    }


def assert_one_clear_line(done: subprocess.CompletedProcess[str], *wanted: str) -> str:
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Traceback" not in output, output
    assert PASSWORD not in output, output
    # the log's JSON lines aside (elastic_transport says when it puts a node on timeout),
    # the command says one thing
    lines = [line for line in done.stderr.splitlines()
             if line.strip() and not line.startswith('{"event"')]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: "), lines[0]
    for text in wanted:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("command", [["reindex"], ["status"]])
def test_the_commands_work_through_the_proxy(
    tmp_path: Path, secured: Secured, command: list[str]
) -> None:
    proxy = secured.proxy
    env = cli_env(secured.unique, proxy.url, tmp_path, elasticsearch_username=USER,
                  elasticsearch_password_file=str(secured.password_file),
                  elasticsearch_ca_file=str(secured.certs.ca.files.cert))
    first = cli(["reindex"], env)
    assert first.returncode == 0, first.stdout + first.stderr
    done = cli(command, env)
    assert done.returncode == 0, done.stdout + done.stderr
    if command == ["status"]:
        assert "refunds" in done.stdout and "exchanges" in done.stdout, done.stdout
    else:
        assert "outcome: " in done.stdout, done.stdout
    assert proxy.counts.refused == 0 and proxy.counts.forwarded > 0, proxy.counts


@pytest.mark.parametrize("command", [["reindex"], ["status"], ["search", "refunds"],
                                     ["embed", "--once"]])
def test_a_wrong_password_is_one_clear_line(
    tmp_path: Path, secured: Secured, command: list[str]
) -> None:
    proxy = secured.proxy
    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-" + PASSWORD)
    done = cli(command, cli_env(secured.unique, proxy.url, tmp_path,
                                elasticsearch_username=USER,
                                elasticsearch_password_file=str(wrong),
                                elasticsearch_ca_file=str(secured.certs.ca.files.cert)))
    assert_one_clear_line(
        done, f"Elasticsearch at {proxy.url} refused the credentials (401): check "
        "elasticsearch_username/password or elasticsearch_api_key")
    assert "not-" + PASSWORD not in done.stdout + done.stderr
    assert proxy.counts.refused >= 1 and proxy.counts.forwarded == 0, proxy.counts


def test_the_proxy_answers_401_as_elasticsearch_security_does(proxy: TlsAuthProxy,
                                                              certs: Certificates) -> None:
    """What the client sees is what a secured cluster says (a test of the test's proxy)."""
    context = ssl.create_default_context(cafile=str(certs.ca.files.cert))
    conn = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=context, timeout=10)
    try:
        conn.request("GET", "/_cluster/health", headers={"Authorization": "Basic ZTp3cm9uZw=="})
        refused = conn.getresponse()
        assert refused.status == 401
        assert refused.getheader("WWW-Authenticate") == 'Basic realm="security", charset="UTF-8"'
        assert b"security_exception" in refused.read()
        # the same connection goes on (keep-alive); a chunked body is forwarded whole
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        body = iter([b'{"query":', b'{"match_all":{}},', b'"size":0}'])
        conn.request("POST", "/_search", body=body, encode_chunked=True,
                     headers={"Authorization": f"Basic {token}",
                              "Content-Type": "application/json"})
        answered = conn.getresponse()
        assert answered.status == 200, answered.read()
        assert b'"hits"' in answered.read()
    finally:
        conn.close()
    assert proxy.counts.connections == 1 and proxy.counts.chunked_bodies == 1, proxy.counts


@pytest.mark.parametrize(("case", "command"), [
    ("another CA", ["reindex"]), ("self-signed, no CA set", ["reindex"]),
    ("no CA set", ["reindex"]), ("another CA", ["search", "refunds"]),
])
def test_a_certificate_that_cannot_be_verified_is_one_clear_line(
    tmp_path: Path, secured: Secured, elasticsearch_url: str, case: str, command: list[str]
) -> None:
    certs, unique = secured.certs, secured.unique
    server = certs.self_signed if case.startswith("self-signed") else certs.server
    more = {"elasticsearch_ca_file": str(certs.other_ca.files.cert)} if case == "another CA" \
        else {}
    with TlsAuthProxy(upstream(elasticsearch_url), server.chain, server.key, username=USER,
                      password=PASSWORD) as node:
        done = cli(command, cli_env(unique, node.url, tmp_path,
                                        elasticsearch_username=USER,
                                        elasticsearch_password=PASSWORD, **more))
        line = assert_one_clear_line(
            done, f"Elasticsearch at {node.url}: TLS verification failed "
            "(certificate verify failed: ", "set elasticsearch_ca_file")
        assert node.counts.forwarded == 0 and node.counts.handshake_failures >= 1
    assert "self-signed certificate" in line, line


def test_a_wrong_fingerprint_names_the_fingerprint_setting(
    proxy: TlsAuthProxy, certs: Certificates, unique: str
) -> None:
    store = ElasticsearchStore.connect(proxy.url, unique, basic_auth=(USER, PASSWORD),
                                       ca_fingerprint=certs.other_ca.files.fingerprint)
    with pytest.raises(StoreAccessError) as caught:
        store.ensure_ready()
    assert str(caught.value).startswith(f"Elasticsearch at {proxy.url}: TLS verification "
                                        "failed (Fingerprints did not match"), caught.value
    assert "elasticsearch_ca_fingerprint" in str(caught.value)
    assert proxy.counts.forwarded == 0


# -- a whole Kafka-mode worker -----------------------------------------------------------

@pytest.fixture
def secured_pipeline(kafka_bootstrap: str, secured: Secured) -> Iterator[Pipeline]:
    """A worker's environment whose only way to Elasticsearch is the proxy."""
    p = Pipeline(secured.unique, kafka_bootstrap, secured.proxy.url, partitions=1, extra={
        "POLICY_INDEXER_ELASTICSEARCH_USERNAME": USER,
        "POLICY_INDEXER_ELASTICSEARCH_PASSWORD_FILE": str(secured.password_file),
        "POLICY_INDEXER_ELASTICSEARCH_CA_FILE": str(secured.certs.ca.files.cert),
    })
    ensure_topics(kafka_bootstrap, [p.topic, p.dead_letter_topic], partitions=p.partitions)
    yield p
    delete_topics(kafka_bootstrap, [p.topic, p.dead_letter_topic])


def test_a_kafka_worker_indexes_through_the_proxy(
    tmp_path: Path, secured_pipeline: Pipeline, proxy: TlsAuthProxy, elasticsearch_url: str,
) -> None:
    library = small_library(tmp_path)
    port = free_port()
    worker = secured_pipeline.start_worker(tmp_path / "logs", metrics_port=str(port))
    direct = ElasticsearchStore.connect(elasticsearch_url, secured_pipeline.unique)
    try:
        publish_events(secured_pipeline.kafka, secured_pipeline.topic, library.events)

        def indexed() -> dict[str, int]:
            direct.refresh()
            return {s.document_id: s.version for s in direct.iter_states()}

        wait_until(indexed, 90, "the worker to index both documents through the proxy",
                   accept=lambda got: got == {"refunds": 2, "exchanges": 1},
                   retry_on=(StoreError,), on_timeout=worker.tail)  # 404 until it starts
        assert healthz(port)["status"] == "ok"
        assert worker.stop() == 0, worker.tail()
    finally:
        worker.kill()
        direct.close()
    assert proxy.counts.refused == 0 and proxy.counts.forwarded > 0, proxy.counts




def test_a_kafka_worker_refused_by_elasticsearch_stays_up_not_ready_and_says_why(
    tmp_path: Path, secured_pipeline: Pipeline, proxy: TlsAuthProxy,
) -> None:
    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-" + PASSWORD)
    port = free_port()
    worker = secured_pipeline.start_worker(
        tmp_path / "logs", metrics_port=str(port), elasticsearch_password_file=str(wrong))
    refusal = (f"StoreAccessError: Elasticsearch at {proxy.url} refused the credentials (401): "
               "check elasticsearch_username/password or elasticsearch_api_key")
    try:
        health = wait_until(lambda: healthz(port), 60, "the worker to say why it is not ready",
                            accept=lambda h: h.get("last_error") == refusal,
                            on_timeout=worker.tail)
        assert health["status"] == "starting", health
        assert readyz(port) == 503
        wait_until(lambda: proxy.counts.refused, 30, "the worker to try again",
                   accept=lambda n: n >= 2, on_timeout=worker.tail)
        assert worker.stop() == 0, worker.tail()
    finally:
        worker.kill()
    assert "not-" + PASSWORD not in worker.log.read_text()
    assert proxy.counts.forwarded == 0
