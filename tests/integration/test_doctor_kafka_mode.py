"""``policy-indexer doctor`` in Kafka mode against the real broker and Elasticsearch.

What a deployment needs, before and after it is set up: missing topics and a
missing index are each a FAIL line naming what makes them, exit 1; once
``topics create`` ran and the index exists, every check passes, exit 0. An
Elasticsearch that does not answer, and too many replicas for one node, are
one line each, never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.workers import Pipeline, free_port

from store.elasticsearch import ElasticsearchStore

pytestmark = [pytest.mark.services]


@pytest.fixture
def pipeline(kafka_bootstrap: str, elasticsearch_url: str, unique: str,
             tmp_path: Path) -> Iterator[Pipeline]:
    library = tmp_path / "library"
    library.mkdir()
    (library / "refunds.md").write_text("# Refunds\n\nWithin 30 days.\n")
    p = Pipeline(unique, kafka_bootstrap, elasticsearch_url,
                 extra={"POLICY_INDEXER_SOURCE_KIND": "folder",
                        "POLICY_INDEXER_SOURCE_PATH": str(library)})
    yield p
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.delete_everything()
    store.close()


def fails(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("FAIL")]


def test_doctor_names_what_is_missing_then_passes_once_it_is_set_up(
    pipeline: Pipeline, elasticsearch_url: str
) -> None:
    before = pipeline.cli("doctor")
    assert before.returncode == 1, before.stdout + before.stderr
    problems = fails(before.stdout)
    assert any(pipeline.topic in p and "topics create" in p for p in problems), before.stdout
    assert any(f"{pipeline.unique}-chunks" in p and "missing" in p for p in problems)
    assert "Traceback" not in before.stderr

    created = pipeline.cli("topics", "create")
    assert created.returncode == 0, created.stdout + created.stderr
    store = ElasticsearchStore.connect(elasticsearch_url, pipeline.unique)
    store.ensure_ready()
    store.close()

    after = pipeline.cli("doctor")
    assert after.returncode == 0, after.stdout + after.stderr
    assert fails(after.stdout) == []
    assert "source: folder: 1 documents listed" in after.stdout


def test_an_unreachable_elasticsearch_and_impossible_replicas_are_one_line_each(
    pipeline: Pipeline,
) -> None:
    away = pipeline.cli("doctor", elasticsearch_url=f"http://127.0.0.1:{free_port()}")
    assert away.returncode == 1
    line = [p for p in fails(away.stdout) if p.startswith("FAIL  elasticsearch")]
    assert len(line) == 1 and "unreachable" in line[0], away.stdout
    assert "Traceback" not in away.stdout + away.stderr

    replicas = pipeline.cli("doctor", index_replicas="1")
    assert any("index_replicas 1 needs more than 1 node" in p for p in fails(replicas.stdout))
