"""``policy-indexer webhook`` refuses to start without usable secrets, naming the problem."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from policy_indexer.cli import main


@pytest.mark.parametrize(
    ("secrets", "message"),
    [
        (None, "no webhook secret configured"),
        ('["short"]', "webhook secret #1 is 5 bytes; need at least 16"),
        ('["0123456789abcdef", "x"]', "webhook secret #2 is 1 bytes"),
    ],
)
def test_the_receiver_does_not_start_without_usable_secrets(
    monkeypatch: pytest.MonkeyPatch, secrets: str | None, message: str
) -> None:
    monkeypatch.delenv("POLICY_INDEXER_WEBHOOK_SECRETS", raising=False)
    if secrets is not None:
        monkeypatch.setenv("POLICY_INDEXER_WEBHOOK_SECRETS", secrets)
    result = CliRunner().invoke(main, ["webhook"])
    assert result.exit_code != 0
    assert message in result.output


def test_more_than_two_secrets_are_refused_by_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POLICY_INDEXER_WEBHOOK_SECRETS", '["a"' + ', "a"' * 2 + "]")
    result = CliRunner().invoke(main, ["webhook"])
    assert result.exit_code == 1
    assert "POLICY_INDEXER_WEBHOOK_SECRETS=***" in result.output, result.output
    assert "at most 2" in result.output
