"""``policy-indexer status --json`` in both modes: what a script checking the index reads."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from support.chunks import make_chunk
from support.kafka_admin import delete_topics
from support.workers import CLI

from consumers.dead_letter import DeadLetter
from consumers.kafka_dead_letters import KafkaDeadLetterSink
from store.elasticsearch import ElasticsearchStore
from store.model import DocumentState
from transport.kafka import ProducerPolicy, ensure_topics
from transport.kafka_producer import KafkaSender

pytestmark = pytest.mark.slow  # runs the CLI as processes (several seconds)


def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    clean.update({"POLICY_INDEXER_LOG_LEVEL": "WARNING",
                  **{f"POLICY_INDEXER_{k.upper()}": v for k, v in env.items()}})
    return subprocess.run([CLI, *args], env=clean, capture_output=True, text=True, timeout=300,
                          check=False)


def status_json(**env: str) -> dict[str, Any]:
    done = cli("status", "--json", **env)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.mark.corpus
def test_embedded_status_shows_lag_against_the_source_until_the_index_catches_up(
    tmp_path: Path, corpora_dir: Path
) -> None:
    log = corpora_dir / "basecamp-policies.jsonl"
    env = {"embedded_dir": str(tmp_path / "data"), "source_kind": "changelog",
           "source_path": str(log)}
    assert cli("replay", str(log), "--limit", "200", **env).returncode == 0

    behind = status_json(**env)
    docs = {d["document_id"]: d for d in behind["documents"]}
    late = [d for d in docs.values() if d["status"] != "current"]
    assert late and all(d["lag_seconds"] > 0 for d in late)
    assert behind["max_lag_seconds"] == max(d["lag_seconds"] for d in late)
    assert docs["refund"]["source_version"] > (docs["refund"]["indexed_version"] or 0)
    assert behind["leftover_versions"] == 0 and behind["dead_letters"] == 0

    assert cli("replay", str(log), **env).returncode == 0
    caught_up = status_json(**env)
    assert caught_up["max_lag_seconds"] == 0 and caught_up["behind"] == 0
    assert len(caught_up["documents"]) == 26
    refund = next(d for d in caught_up["documents"] if d["document_id"] == "refund")
    assert refund["source_version"] == refund["indexed_version"] and refund["chunks"] > 0

    assert caught_up["last_reindex"] is None
    assert cli("reindex", **env).returncode == 0
    assert status_json(**env)["last_reindex"] is not None

    table = cli("status", **env)
    assert table.returncode == 0
    assert "documents: 26   behind: 0   max lag: 0s" in table.stdout


def test_embedded_status_without_an_index_says_how_to_make_one(tmp_path: Path) -> None:
    done = cli("status", embedded_dir=str(tmp_path / "none"))
    assert done.returncode == 1
    assert "no embedded index at" in done.stderr and "replay" in done.stderr


@pytest.mark.services
def test_kafka_mode_status_reads_elasticsearch_and_the_dead_letter_topic(
    kafka_bootstrap: str, elasticsearch_url: str, unique: str
) -> None:
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.ensure_ready()
    dlq = f"{unique}-dlq"
    ensure_topics(kafka_bootstrap, [dlq], partitions=1)
    sender = KafkaSender(kafka_bootstrap, ProducerPolicy())
    try:
        t0 = datetime(2024, 1, 1, tzinfo=UTC)
        store.write_chunks([make_chunk("refund", 2, "a"), make_chunk("refund", 1, "a")])
        store.put_state(DocumentState("refund", 2, t0, t0, ("refund@v2#a",)))
        sink = KafkaDeadLetterSink(sender, dlq)
        for offset in (3, 4):
            sink.send(DeadLetter(b"k", b"{", "not_json", "not JSON", "t", 0, offset))
        report = status_json(pipeline="kafka", elasticsearch_url=elasticsearch_url,
                             index_prefix=unique, kafka_bootstrap_servers=kafka_bootstrap,
                             kafka_dead_letter_topic=dlq, sweep_grace_seconds="0")
    finally:
        sender.close()
        delete_topics(kafka_bootstrap, [dlq])
        store.delete_everything()
        store.close()
    assert report["mode"] == "kafka"
    assert report["dead_letters"] == 2
    assert report["leftover_versions"] == 1  # refund@v1#a, below the state's version
    assert [(d["document_id"], d["indexed_version"], d["chunks"]) for d in report["documents"]] == [
        ("refund", 2, 2)
    ]
    assert report["max_lag_seconds"] is None  # no source configured: unknown, not 0
