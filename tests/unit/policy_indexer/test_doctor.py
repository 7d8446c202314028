"""``policy-indexer doctor`` in the embedded mode: each problem is one line, and exit 1.

Bad inputs tried: a damaged index file, a folder source with a file that is
not UTF-8, a source path that does not exist, no source configured (a skip,
not a failure). The Kafka-mode checks run against the real services in
``tests/integration/test_doctor_kafka_mode.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_indexer.cli import main
from policy_indexer.runtime.doctor import run_checks
from policy_indexer.settings import Settings


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    import os

    for name in list(os.environ):
        if name.startswith("POLICY_INDEXER_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # no .env of the repository
    return tmp_path


def library(root: Path) -> Path:
    folder = root / "library"
    folder.mkdir()
    (folder / "refunds.md").write_text("---\ntitle: Refunds\n---\n# Refunds\n\n30 days.\n")
    return folder


def test_a_fresh_embedded_setup_with_a_folder_passes(clean_env: Path) -> None:
    settings = Settings(embedded_dir=clean_env / "state", source_kind="folder",
                        source_path=str(library(clean_env)))
    checks = run_checks(settings)
    assert [c.outcome for c in checks if c.outcome == "fail"] == [], checks
    assert any(c.name == "source" and "1 documents listed" in c.detail for c in checks)


def test_a_damaged_index_file_and_an_unreadable_document_each_fail_by_name(
    clean_env: Path,
) -> None:
    state = clean_env / "state"
    state.mkdir()
    (state / "index.sqlite3").write_bytes(b"this is not a database" * 100)
    folder = library(clean_env)
    (folder / "broken.md").write_bytes(b"# Broken\n\n\xff\xfe not UTF-8\n")
    result = CliRunner().invoke(main, ["doctor"], env={
        "POLICY_INDEXER_EMBEDDED_DIR": str(state), "POLICY_INDEXER_SOURCE_KIND": "folder",
        "POLICY_INDEXER_SOURCE_PATH": str(folder)})
    assert result.exit_code == 1, result.output
    failures = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert any("index.sqlite3" in line for line in failures), result.output
    assert any("broken" in line and "unreadable" in line for line in failures), result.output
    assert "Traceback" not in result.output


def test_a_missing_source_folder_fails_and_no_source_is_a_skip(clean_env: Path) -> None:
    missing = run_checks(Settings(embedded_dir=clean_env / "s", source_kind="folder",
                                  source_path=str(clean_env / "nowhere")))
    assert [c.name for c in missing if c.outcome == "fail"] == ["source"], missing
    unset = run_checks(Settings(embedded_dir=clean_env / "s"))
    assert [c.outcome for c in unset if c.name == "source"] == ["skip"]


def test_json_output_is_one_object_per_check(clean_env: Path) -> None:
    result = CliRunner().invoke(main, ["doctor", "--json"],
                                env={"POLICY_INDEXER_EMBEDDED_DIR": str(clean_env / "s")})
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert {"name", "outcome", "detail"} <= set(rows[0])


def test_the_secrets_line_names_the_secrets_set_never_their_values(clean_env: Path) -> None:
    settings = Settings(embedded_dir=clean_env / "s", elasticsearch_username="indexer",
                        elasticsearch_password="pw-never-printed",
                        webhook_secrets=["webhook-secret-never-printed"])
    line = next(c for c in run_checks(settings) if c.name == "secrets")
    assert line.detail == "set: elasticsearch_password, webhook_secrets"
    assert "never-printed" not in line.line()
