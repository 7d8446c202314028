"""Kafka over SASL_SSL for real: a broker of the test's own with a SCRAM-SHA-512
listener behind a certificate from a CA made here.

Through it: ``topics create`` then ``check``; the webhook publishes a signed change and
the worker consumes it into Elasticsearch (the shared one, under a unique prefix); a
wrong password, a CA that did not sign the broker, a plaintext client on the TLS
port and a mechanism the listener does not offer each give one line that says so, no
traceback, no password. SASL PLAIN is tried on a SASL_PLAINTEXT listener of the same
broker. The broker's
PLAINTEXT listener (the runner's health probe) is never used by the processes.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.own_broker import SecuredBroker, secured_broker_under
from support.tls_ca import CertificateAuthority
from support.waiting import wait_until
from support.webhook_helpers import SECRET, encode, payload, signed_headers
from support.workers import CLI, Pipeline, free_port, healthz, readyz

from store.elasticsearch import ElasticsearchStore
from store.errors import StoreError

pytestmark = [pytest.mark.services, pytest.mark.slow]

PASSWORD = "scram-Pw-4f9c1e-not-in-any-log"
WRONG = "scram-Pw-wrong-0000-not-in-any-log"


@pytest.fixture(scope="module")
def broker(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecuredBroker]:
    """One SASL_SSL broker for the module (after the shared one answered: the jars are cached)."""
    with secured_broker_under(tmp_path_factory.mktemp("secured-kafka"), PASSWORD) as secured:
        yield secured


@pytest.fixture
def pipeline(broker: SecuredBroker, elasticsearch_url: str, unique: str) -> Iterator[Pipeline]:
    p = Pipeline(unique, broker.bootstrap, elasticsearch_url, partitions=2,
                 extra=broker.settings_env())
    yield p
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.delete_everything()
    store.close()


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The command's error: exactly one line, no traceback, no password."""
    out = done.stdout + done.stderr
    assert "Traceback" not in out, out
    assert PASSWORD not in out and WRONG not in out, out
    lines = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, out
    return lines[0]


def test_topics_create_then_check_pass_through_sasl_ssl(pipeline: Pipeline) -> None:
    before = pipeline.cli("topics", "check")
    assert before.returncode == 1, before.stdout + before.stderr
    assert before.stdout.splitlines() == [
        f"problem: topic {name!r} does not exist (`policy-indexer topics create` makes it)"
        for name in (pipeline.topic, pipeline.dead_letter_topic)
    ]

    created = pipeline.cli("topics", "create")
    assert created.returncode == 0, created.stdout + created.stderr
    assert created.stdout.splitlines() == [
        f"created {name}: 2 partitions, replication factor 1, min.insync.replicas 1, "
        "max.message.bytes 11534336" for name in (pipeline.topic, pipeline.dead_letter_topic)
    ]
    again = pipeline.cli("topics", "create")
    assert again.returncode == 0, again.stdout + again.stderr
    assert [line.split()[:2] for line in again.stdout.splitlines()] == [
        ["exists", pipeline.topic], ["exists", pipeline.dead_letter_topic]]

    checked = pipeline.cli("topics", "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith(
        f"ok: {pipeline.topic}, {pipeline.dead_letter_topic} on {pipeline.kafka} "
        "(SASL_SSL, SCRAM-SHA-512 as indexer)")

    # A deployment that wants more than the topics have is told what differs, per topic.
    wanting = pipeline.cli("topics", "check", kafka_partitions="6")
    assert wanting.returncode == 1
    assert wanting.stdout.splitlines() == [
        f"problem: topic {name!r} has 2 partitions, fewer than kafka_partitions=6"
        for name in (pipeline.topic, pipeline.dead_letter_topic)
    ]


def test_the_webhook_publishes_and_the_worker_indexes_through_sasl_ssl(
    pipeline: Pipeline, tmp_path: Path, elasticsearch_url: str,
) -> None:
    worker_port = free_port()
    worker = pipeline.start_worker(tmp_path / "logs", metrics_port=str(worker_port))
    webhook_port = free_port()
    webhook = subprocess.Popen(
        [CLI, "webhook"], env=pipeline.env(webhook_port=str(webhook_port),
                                           webhook_secrets=json.dumps([SECRET.decode()])),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{webhook_port}"
    store = ElasticsearchStore.connect(elasticsearch_url, pipeline.unique)
    try:
        wait_until(lambda: healthz(worker_port).get("status"), 90,
                   "the worker to be ready on the SASL_SSL broker",
                   accept=lambda status: status == "ok", on_timeout=worker.tail)
        wait_until(lambda: httpx.get(f"{url}/readyz", timeout=5).status_code, 60,
                   "the webhook to be ready on the SASL_SSL broker",
                   accept=lambda code: code == 200, retry_on=(httpx.TransportError,))
        body = encode(payload(version=7))
        sent = httpx.post(f"{url}/webhooks/cms", content=body,
                          headers=signed_headers(body, at=time.time()), timeout=30)
        assert sent.status_code == 202, sent.text

        def indexed() -> int | None:
            store.refresh()
            state = store.get_state("refunds/late-delivery")
            return None if state is None else state.version

        wait_until(indexed, 60, "the worker to index the webhook's change",
                   accept=lambda version: version == 7, retry_on=(StoreError,),
                   on_timeout=worker.tail)
        assert worker.stop() == 0, worker.tail()
    finally:
        worker.kill()
        webhook.terminate()
        out, _ = webhook.communicate(timeout=30)
        store.close()
    assert webhook.returncode == 0, out
    for text in (out, worker.log.read_text()):
        assert PASSWORD not in text


def test_replay_and_dead_letters_go_through_sasl_ssl(pipeline: Pipeline, tmp_path: Path) -> None:
    """The one-shot commands build their clients from the same connection as the workers."""
    log = tmp_path / "one.jsonl"
    log.write_text(json.dumps({
        "seq": 1, "document_id": "refunds/lisbon", "path": "refunds/lisbon.md",
        "action": "upsert", "version": 1, "changed_at": "2026-11-01T10:00:00Z",
        "commit": "abc123", "content": "# Refunds\n\nRefund within 30 days.\n",
    }) + "\n")
    replayed = pipeline.cli("replay", str(log), "--to", "kafka")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert f"published 1 changes from {log} to {pipeline.topic} (kafka)" in replayed.stdout
    letters = pipeline.cli("dead-letters", "list")
    assert letters.returncode == 0, letters.stdout + letters.stderr
    assert letters.stdout.strip() == "0 dead letters"

    refused = pipeline.cli("dead-letters", "list", kafka_sasl_password=WRONG)
    assert refused.returncode == 1
    assert one_line(refused).startswith(
        f"Error: cannot list dead letters: Kafka at {pipeline.kafka} refused the SASL login")


def test_a_wrong_password_is_one_line_naming_the_user(pipeline: Pipeline) -> None:
    done = pipeline.cli("topics", "create", kafka_sasl_password=WRONG)
    assert done.returncode == 1
    assert one_line(done) == (
        f"Error: Kafka at {pipeline.kafka} refused the SASL login of 'indexer' (SCRAM-SHA-512): "
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism SCRAM-SHA-512; check kafka_sasl_username, kafka_sasl_password and "
        "kafka_sasl_mechanism"
    )


def test_a_worker_with_a_wrong_password_stays_up_not_ready_and_says_why(
    pipeline: Pipeline, tmp_path: Path,
) -> None:
    port = free_port()
    worker = pipeline.start_worker(tmp_path / "logs", metrics_port=str(port),
                                   kafka_sasl_password=WRONG)
    try:
        health = wait_until(lambda: healthz(port), 90, "the worker to say why it is not ready",
                            accept=lambda h: "refused the SASL login" in str(h.get("last_error")),
                            on_timeout=worker.tail)
        assert health["status"] == "starting", health
        assert str(health["last_error"]).startswith(
            f"KafkaRefused: Kafka at {pipeline.kafka} refused the SASL login of 'indexer'")
        assert readyz(port) == 503
        assert worker.proc.poll() is None, worker.tail()
        assert worker.stop() == 0, worker.tail()
    finally:
        worker.kill()
    log = worker.log.read_text()
    assert "refused the SASL login of 'indexer'" in log
    assert WRONG not in log and PASSWORD not in log


def test_a_webhook_with_a_wrong_password_answers_503_and_logs_why(pipeline: Pipeline) -> None:
    port = free_port()
    webhook = subprocess.Popen(
        [CLI, "webhook"], env=pipeline.env(webhook_port=str(port), kafka_sasl_password=WRONG,
                                           webhook_secrets=json.dumps([SECRET.decode()])),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=5).status_code, 60,
                   "the webhook to serve", accept=lambda code: code == 200,
                   retry_on=(httpx.TransportError,))
        body = encode(payload())
        sent = httpx.post(f"{url}/webhooks/cms", content=body,
                          headers=signed_headers(body, at=time.time()), timeout=60)
        assert sent.status_code == 503, sent.text
        assert httpx.get(f"{url}/readyz", timeout=60).status_code == 503
    finally:
        webhook.terminate()
        out, _ = webhook.communicate(timeout=30)
    assert f"Kafka at {pipeline.kafka} refused the SASL login of 'indexer'" in out, out
    assert WRONG not in out and PASSWORD not in out


def test_sasl_plain_over_plaintext_logs_in_and_a_wrong_password_is_named(
    pipeline: Pipeline, broker: SecuredBroker,
) -> None:
    """PLAIN (Confluent Cloud's mechanism) on a SASL_PLAINTEXT listener of the same broker."""
    plain = {"kafka_bootstrap_servers": broker.sasl_plain_bootstrap,
             "kafka_security_protocol": "SASL_PLAINTEXT", "kafka_sasl_mechanism": "PLAIN"}
    created = pipeline.cli("topics", "create", **plain)
    assert created.returncode == 0, created.stdout + created.stderr
    assert pipeline.cli("topics", "check", **plain).returncode == 0
    refused = pipeline.cli("topics", "create", **plain, kafka_sasl_password=WRONG)
    assert refused.returncode == 1
    assert one_line(refused) == (
        f"Error: Kafka at {broker.sasl_plain_bootstrap} refused the SASL login of 'indexer' "
        "(PLAIN): Authentication failed: Invalid username or password; check "
        "kafka_sasl_username, kafka_sasl_password and kafka_sasl_mechanism"
    )
    wrong_mechanism = pipeline.cli("topics", "create", **{
        **plain, "kafka_sasl_mechanism": "SCRAM-SHA-256"})
    assert wrong_mechanism.returncode == 1
    assert one_line(wrong_mechanism) == (
        f"Error: Kafka at {broker.sasl_plain_bootstrap} does not offer SASL SCRAM-SHA-256 "
        "(it offers PLAIN): check kafka_sasl_mechanism"
    )


def test_a_ca_that_did_not_sign_the_broker_is_one_line_naming_kafka_ca_file(
    pipeline: Pipeline, tmp_path: Path,
) -> None:
    other = CertificateAuthority.create(tmp_path / "other", "other").ca_file
    done = pipeline.cli("topics", "check", kafka_ca_file=str(other))
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"problem: TLS certificate of Kafka at {pipeline.kafka} failed verification: "
        "self-signed certificate in certificate chain; check kafka_ca_file (the CA that "
        f"signed the brokers' certificates), now {other}"
    ]
    created = pipeline.cli("topics", "create", kafka_ca_file=str(other))
    assert created.returncode == 1
    assert one_line(created).startswith(
        f"Error: TLS certificate of Kafka at {pipeline.kafka} failed verification")


def test_a_plaintext_client_on_the_tls_port_is_told_to_use_tls(pipeline: Pipeline) -> None:
    done = pipeline.cli("topics", "create", kafka_security_protocol="PLAINTEXT")
    assert done.returncode == 1
    assert one_line(done) == (
        f"Error: Kafka at {pipeline.kafka} speaks TLS but kafka_security_protocol is PLAINTEXT: "
        "set SSL or SASL_SSL (with kafka_ca_file), or use the broker's plaintext listener"
    )
    # The SASL and TLS settings it was still given are named as unused, not silently dropped.
    assert "note: kafka_sasl_mechanism, kafka_sasl_username, kafka_sasl_password, " \
           "kafka_ca_file set but kafka_security_protocol=PLAINTEXT does not use them" \
           in done.stderr



