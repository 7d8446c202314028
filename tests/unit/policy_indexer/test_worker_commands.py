"""`run`, `replay` and `sweep` as a user meets them on the command line."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from policy_indexer.cli import main


@pytest.mark.parametrize(
    ("setting", "value", "named"),
    [
        ("POLICY_INDEXER_SOURCE_PATH", "no-such-library", "no-such-library"),
        ("POLICY_INDEXER_WEBHOOK_SECRETS", '["too-short"]', "webhook secret #1"),
    ],
)
def test_run_in_embedded_mode_names_what_keeps_it_from_starting_and_gives_signals_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, value: str, named: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "library").mkdir()
    monkeypatch.setenv("POLICY_INDEXER_PIPELINE", "embedded")
    monkeypatch.setenv("POLICY_INDEXER_EMBEDDED_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("POLICY_INDEXER_METRICS_PORT", "0")
    monkeypatch.setenv("POLICY_INDEXER_WEBHOOK_PORT", "0")
    monkeypatch.setenv("POLICY_INDEXER_SOURCE_KIND", "folder")
    monkeypatch.setenv("POLICY_INDEXER_SOURCE_PATH", "library")
    monkeypatch.setenv(setting, value)
    handlers = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    result = CliRunner().invoke(main, ["run"])
    assert result.exit_code == 1, result.output
    assert "policy-indexer run cannot start" in result.output and named in result.output
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == handlers


def test_a_bad_pipeline_setting_names_the_key_and_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLICY_INDEXER_PIPELINE", "kafak")
    result = CliRunner().invoke(main, ["run"])
    assert result.exit_code == 2  # a usage error, as click's own
    # one line naming the variable and the value, not a pydantic traceback
    assert "POLICY_INDEXER_PIPELINE='kafak'" in result.output, result.output
    assert "Traceback" not in result.output


@pytest.mark.services
def test_replay_of_a_bad_change_log_names_the_line_and_what_was_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kafka_bootstrap: str, unique: str
) -> None:
    log = tmp_path / "bad.jsonl"
    good = {"seq": 1, "document_id": "a", "path": "a.md", "action": "upsert", "version": 1,
            "changed_at": "2024-01-01T00:00:00Z", "commit": "c", "content": "# A\n"}
    log.write_text(json.dumps(good) + "\n" + '{"seq": 2, "document_id": "a"}\n')
    monkeypatch.setenv("POLICY_INDEXER_KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setenv("POLICY_INDEXER_KAFKA_PARTITIONS", "1")
    from support.kafka_admin import delete_topics

    try:
        result = CliRunner().invoke(
            main, ["replay", str(log), "--to", "kafka", "--topic", f"{unique}-t"]
        )
    finally:
        delete_topics(kafka_bootstrap, [f"{unique}-t"])
    assert result.exit_code == 1
    assert "bad.jsonl:2" in result.output
    assert "1 changes were published before it" in result.output


def test_keys_of_other_tools_in_dotenv_do_not_crash_and_a_typo_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("NODE_ENV=production\nPOLICY_INDEXER_LOG_LEVL=DEBUG\n")
    result = CliRunner().invoke(main, ["config"])
    assert result.exit_code == 0, result.output
    assert "POLICY_INDEXER_LOG_LEVL: not a setting (did you mean POLICY_INDEXER_LOG_LEVEL?)" \
        in result.output
