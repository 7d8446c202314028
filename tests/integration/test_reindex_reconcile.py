"""Reconcile against the real Elasticsearch, through the ``policy-indexer reindex`` command."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.faulty_cli import FAULT_ENV
from support.faulty_cli import command as faulty_command
from support.index_equality import assert_index_equals, expected_index
from support.reindex_library import Library

from indexing.core import Indexer
from store.elasticsearch import ElasticsearchStore

pytestmark = pytest.mark.services


@pytest.fixture
def store(elasticsearch_url: str, unique: str) -> Iterator[ElasticsearchStore]:
    store = ElasticsearchStore.connect(elasticsearch_url, unique)
    store.ensure_ready()
    yield store
    store.delete_everything()
    store.client.options(ignore_status=404).indices.delete(index=f"{unique}-reindex-*")
    store.close()


def reindex_cli(store: ElasticsearchStore, url: str, source: Path, *args: str,
                kill_at: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        "PATH": "/usr/bin:/bin",
        "POLICY_INDEXER_PIPELINE": "kafka",
        "POLICY_INDEXER_ELASTICSEARCH_URL": url,
        "POLICY_INDEXER_INDEX_PREFIX": store.names.prefix,
        "POLICY_INDEXER_SOURCE_KIND": "changelog",
        "POLICY_INDEXER_SOURCE_PATH": str(source),
        "POLICY_INDEXER_LOG_LEVEL": "WARNING",
        **{f"POLICY_INDEXER_{k.upper()}": v for k, v in env.items()},
        **({FAULT_ENV: kill_at} if kill_at else {}),
    }
    return subprocess.run(faulty_command("reindex", *args), env=environ, capture_output=True,
                          text=True, timeout=120, check=False)


def indexed_library(tmp_path: Path, store: ElasticsearchStore, documents: int = 40) -> Library:
    library = Library(tmp_path / "changes.jsonl")
    for n in range(documents):
        library.upsert(f"doc-{n:02d}", 1)
    library.write()
    processor = Indexer(store)  # the worker's own path, the worker then stopped
    for event in library.events:
        processor.apply_one(event)
    return library


def chunk_times(store: ElasticsearchStore) -> dict[str, object]:
    store.refresh()
    return {ref.chunk_id: ref.indexed_at for ref in store.iter_chunks()}


def test_drift_is_repaired_and_a_second_run_has_nothing_to_do(
    tmp_path: Path, store: ElasticsearchStore, elasticsearch_url: str
) -> None:
    library = indexed_library(tmp_path, store)
    for n in range(5):
        library.upsert(f"doc-{n:02d}", 2)          # changed while the worker was stopped
    library.upsert("new-a", 1)                       # created
    library.upsert("new-b", 3)
    library.delete("doc-10", 2)                      # deleted
    library.delete("doc-11", 4)
    library.upsert("short-lived", 1)
    library.delete("short-lived", 2)                 # created and deleted meanwhile
    library.write()
    store.refresh()
    damaged = [r.chunk_id for r in store.find_chunks("doc-20")][:1]
    store.delete_chunks(damaged)                     # a chunk lost from the index

    first = reindex_cli(store, elasticsearch_url, library.path)
    assert first.returncode == 0, first.stderr + first.stdout
    assert "  reindex: 7" in first.stdout and "  delete: 2" in first.stdout
    assert "  repair: 1" in first.stdout and "  tombstone: 1" in first.stdout
    assert_index_equals(store, expected_index(library.events))

    before = chunk_times(store)
    started = time.monotonic()
    second = reindex_cli(store, elasticsearch_url, library.path)
    elapsed = time.monotonic() - started
    assert second.returncode == 0, second.stderr
    assert "  up_to_date: 43" in second.stdout and "applied" not in second.stdout
    assert chunk_times(store) == before  # not one chunk rewritten
    print(f"nothing-to-do reindex of 43 documents, whole CLI process: {elapsed:.2f}s")


def test_a_listing_that_breaks_halfway_deletes_nothing_and_exits_non_zero(
    tmp_path: Path, store: ElasticsearchStore, elasticsearch_url: str
) -> None:
    library = indexed_library(tmp_path, store, documents=10)
    lines = library.path.read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:5], "{not json", *lines[5:]]) + "\n")
    before = chunk_times(store)
    result = reindex_cli(store, elasticsearch_url, broken)
    assert result.returncode == 1
    assert "ListingFailedError" in result.stderr and "broken.jsonl:6" in result.stderr
    assert "outcome: failed" in result.stdout
    assert chunk_times(store) == before

    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = reindex_cli(store, elasticsearch_url, empty, "--allow-mass-delete")
    assert result.returncode == 1 and "listed no documents" in result.stderr
    assert chunk_times(store) == before


def test_mass_deletion_is_refused_then_done_with_the_flag(
    tmp_path: Path, store: ElasticsearchStore, elasticsearch_url: str
) -> None:
    library = indexed_library(tmp_path, store, documents=20)
    for n in range(5):
        library.delete(f"doc-{n:02d}", 2)  # 25% of the library
    library.write()
    refused = reindex_cli(store, elasticsearch_url, library.path)
    assert refused.returncode == 3
    assert "REFUSED: 5 deletions exceed the cap of 2" in refused.stderr
    assert "--allow-mass-delete" in refused.stderr
    store.refresh()
    assert {r.document_id for r in store.iter_chunks()} >= {"doc-00", "doc-04"}

    done = reindex_cli(store, elasticsearch_url, library.path, "--allow-mass-delete")
    assert done.returncode == 0, done.stderr
    assert_index_equals(store, expected_index(library.events))


def test_a_reconcile_killed_midway_is_finished_by_the_next(
    tmp_path: Path, store: ElasticsearchStore, elasticsearch_url: str
) -> None:
    library = indexed_library(tmp_path, store, documents=20)
    for n in range(12):
        library.upsert(f"doc-{n:02d}", 2)
    library.write()
    killed = reindex_cli(store, elasticsearch_url, library.path, reindex_batch_size="2",
                         kill_at="after-chunk-write:4", scheduler_lease_seconds="1")
    assert killed.returncode == -9, killed.stderr
    store.refresh()
    assert {s.version for s in store.iter_states()} == {1, 2}  # half done
    time.sleep(1.2)  # the dead run's lease expires
    rerun = reindex_cli(store, elasticsearch_url, library.path, scheduler_lease_seconds="1")
    assert rerun.returncode == 0, rerun.stderr
    assert_index_equals(store, expected_index(library.events))
