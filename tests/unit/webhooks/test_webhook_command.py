"""``policy-indexer webhook`` refuses to start without usable secrets, naming the problem."""

from __future__ import annotations

from pathlib import Path

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
    assert result.exit_code == 2
    assert "POLICY_INDEXER_WEBHOOK_SECRETS=***" in result.output, result.output
    assert "at most 2" in result.output


def _headers(output: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in output.splitlines() if ": " in line)


@pytest.mark.parametrize("scheme", ["cms", "github", "gitlab", "standard"])
def test_webhook_sign_prints_headers_the_receiver_accepts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scheme: str
) -> None:
    """``webhook sign`` with the configured secret: the adapter's check passes, and fails
    for another body."""
    import base64
    import time

    from sources.git import GitSource
    from webhooks import signature
    from webhooks.adapters.base import Adapter, Unauthorized, WebhookRequest
    from webhooks.adapters.git_push import GitPushTarget
    from webhooks.adapters.github import GitHubPushAdapter
    from webhooks.adapters.gitlab import GitLabPushAdapter
    from webhooks.adapters.standard import StandardWebhooksAdapter, decode_secret

    secret = "0123456789abcdef-secret"
    standard = "whsec_" + base64.b64encode(secret.encode()).decode()
    for name, value in (("WEBHOOK_SECRETS", secret), ("WEBHOOK_GITHUB_SECRETS", secret),
                        ("WEBHOOK_GITLAB_TOKENS", secret), ("WEBHOOK_STANDARD_SECRETS", standard)):
        monkeypatch.setenv(f"POLICY_INDEXER_{name}", f'["{value}"]')
    body_file = tmp_path / "body.json"
    body_file.write_bytes(b'{"ref": "refs/heads/main"}')
    result = CliRunner().invoke(main, ["webhook", "sign", "--scheme", scheme, str(body_file)])
    assert result.exit_code == 0, result.output
    headers = {k.lower(): v for k, v in _headers(result.output).items()}
    assert headers["content-type"] == "application/json"
    body = body_file.read_bytes()
    if scheme == "cms":
        parsed = signature.parse(headers["policy-signature"])
        assert signature.verify(parsed, body, [secret.encode()]) == 0
        with pytest.raises(signature.SignatureMismatch):
            signature.verify(parsed, body + b" ", [secret.encode()])
        return
    # authenticate never reaches the Git source
    target = GitPushTarget("o/r", "main", GitSource(str(tmp_path), tmp_path / "mirror"))
    adapter: Adapter
    if scheme == "github":
        adapter = GitHubPushAdapter([secret.encode()], target)
    elif scheme == "gitlab":
        adapter = GitLabPushAdapter([secret.encode()], target)
    else:
        adapter = StandardWebhooksAdapter([decode_secret(standard)])
    adapter.authenticate(WebhookRequest(headers, body, time.time()))
    if scheme != "gitlab":  # a GitLab token does not depend on the body
        with pytest.raises(Unauthorized):
            adapter.authenticate(WebhookRequest(headers, body + b" ", time.time()))


def test_webhook_sign_without_a_secret_names_the_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("POLICY_INDEXER_WEBHOOK_GITHUB_SECRETS", raising=False)
    body_file = tmp_path / "body.json"
    body_file.write_bytes(b"{}")
    result = CliRunner().invoke(main, ["webhook", "sign", "--scheme", "github", str(body_file)])
    assert result.exit_code == 2
    assert "POLICY_INDEXER_WEBHOOK_GITHUB_SECRETS" in result.output


def test_push_adapters_without_the_git_source_do_not_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("POLICY_INDEXER_WEBHOOK_SECRETS", raising=False)
    monkeypatch.delenv("POLICY_INDEXER_SOURCE_KIND", raising=False)
    monkeypatch.setenv("POLICY_INDEXER_WEBHOOK_GITHUB_SECRETS", '["0123456789abcdef-secret"]')
    result = CliRunner().invoke(main, ["webhook"])
    assert result.exit_code == 1
    assert "POLICY_INDEXER_SOURCE_KIND=git" in result.output, result.output
