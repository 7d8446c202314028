"""Settings: one typed object, read from POLICY_INDEXER_* variables or handed a dict."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from policy_indexer.cli import main
from policy_indexer.settings import Settings


def test_environment_variables_with_the_prefix_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLICY_INDEXER_KAFKA_TOPIC", "policies.changes")
    monkeypatch.setenv("POLICY_INDEXER_METRICS_PORT", "9999")
    settings = Settings()
    assert settings.kafka_topic == "policies.changes"
    assert settings.metrics_port == 9999


def test_a_plain_dict_configures_it_in_tests() -> None:
    assert Settings(index_prefix="tenant-a").index_prefix == "tenant-a"


def test_a_bad_value_names_the_setting_and_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLICY_INDEXER_METRICS_PORT", "ninety")
    with pytest.raises(ValidationError) as excinfo:
        Settings()
    message = str(excinfo.value)
    assert "metrics_port" in message
    assert "ninety" in message


def test_an_index_prefix_elasticsearch_would_refuse_is_rejected() -> None:
    with pytest.raises(ValidationError, match="index_prefix"):
        Settings(index_prefix="Upper Case")


def test_config_command_prints_settings_with_secrets_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POLICY_INDEXER_ELASTICSEARCH_API_KEY", "s3cr3t-key")
    result = CliRunner().invoke(main, ["config"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed["elasticsearch_api_key"] == "**********"
    assert "s3cr3t-key" not in result.output


def test_both_workers_get_their_retry_and_commit_policies_from_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POLICY_INDEXER_RETRY_MAX_SECONDS", "3.5")
    monkeypatch.setenv("POLICY_INDEXER_RETRY_MAX_ATTEMPTS", "4")
    monkeypatch.setenv("POLICY_INDEXER_COMMIT_EVERY_RECORDS", "17")
    settings = Settings()
    retry, commit = settings.retry_policy(), settings.commit_policy()
    assert (retry.max_s, retry.max_attempts) == (3.5, 4)
    assert (commit.max_records, commit.max_interval_s) == (17, settings.commit_every_seconds)
