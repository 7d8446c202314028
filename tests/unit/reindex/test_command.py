"""``policy-indexer reindex`` in the embedded mode (SQLite), with a Markdown folder source."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_indexer.cli import main
from reindex.backends_sqlite import SchedulerDatabase
from reindex.lease import Lease
from store.sqlite import SQLiteStore


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    library = tmp_path / "library"
    for name in ("refund", "shipping", "privacy"):
        (library / name).mkdir(parents=True)
        (library / name / "index.md").write_text(
            f"---\nversion: 3\nchanged_at: 2026-01-01T00:00:00Z\n---\n# {name}\n\nText.\n")
    for key in list(os.environ):
        if key.startswith("POLICY_INDEXER_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("POLICY_INDEXER_PIPELINE", "embedded")
    monkeypatch.setenv("POLICY_INDEXER_EMBEDDED_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("POLICY_INDEXER_SOURCE_KIND", "folder")
    monkeypatch.setenv("POLICY_INDEXER_SOURCE_PATH", str(library))
    monkeypatch.setenv("POLICY_INDEXER_LOG_LEVEL", "ERROR")
    return library


def live_states(tmp_path: Path) -> dict[str, int]:
    store = SQLiteStore(tmp_path / "state" / "index.sqlite3")
    try:
        return {s.document_id: s.version for s in store.iter_states() if not s.deleted}
    finally:
        store.close()


def test_reindex_by_hand_in_embedded_mode(folder: Path, tmp_path: Path) -> None:
    cli = CliRunner()
    dry = cli.invoke(main, ["reindex", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "reindex: 3" in dry.output and "dry run" in dry.output
    assert live_states(tmp_path) == {}

    first = cli.invoke(main, ["reindex"])
    assert first.exit_code == 0, first.output
    assert live_states(tmp_path) == {"refund": 3, "shipping": 3, "privacy": 3}

    (folder / "privacy" / "index.md").unlink()  # 1 of 3 gone: above 10%
    refused = cli.invoke(main, ["reindex"])
    assert refused.exit_code == 3
    assert "REFUSED" in refused.output and "--allow-mass-delete" in refused.output
    assert "privacy" in live_states(tmp_path)

    done = cli.invoke(main, ["reindex", "--allow-mass-delete"])
    assert done.exit_code == 0, done.output
    assert live_states(tmp_path) == {"refund": 3, "shipping": 3}

    database = SchedulerDatabase(tmp_path / "state" / "scheduler.sqlite3")
    try:
        outcomes = [r.outcome for r in reversed(database.recent("reconcile"))]
    finally:
        database.close()
    assert outcomes == ["success", "success", "refused", "success"]  # the dry run is recorded


def test_a_missing_source_folder_fails_the_run(folder: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    cli = CliRunner()
    assert cli.invoke(main, ["reindex"]).exit_code == 0
    monkeypatch.setenv("POLICY_INDEXER_SOURCE_PATH", str(tmp_path / "unmounted"))
    result = cli.invoke(main, ["reindex"])
    assert result.exit_code == 1
    assert "ListingFailedError" in result.output and "unmounted" in result.output
    assert len(live_states(tmp_path)) == 3


def test_a_run_by_hand_does_not_overlap_a_running_one(folder: Path, tmp_path: Path) -> None:
    cli = CliRunner()
    assert cli.invoke(main, ["reindex", "--dry-run"]).exit_code == 0  # creates the files
    database = SchedulerDatabase(tmp_path / "state" / "scheduler.sqlite3")
    try:
        held, _ = Lease(database).acquire("reconcile", "node-7:42", timedelta(minutes=5))
        assert held is not None
        result = cli.invoke(main, ["reindex"])
    finally:
        database.close()
    assert result.exit_code == 1
    assert "held by node-7:42" in result.output
    assert live_states(tmp_path) == {}
