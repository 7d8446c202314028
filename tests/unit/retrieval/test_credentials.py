"""API keys map to label sets; bad configuration is refused naming the key and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.credentials import Credentials, CredentialsError, UnknownKey

AGENT_KEY = "agent-key-0123456789abcdef"
FINANCE_KEY = "finance-key-0123456789abcdef"
CONFIG = {
    "support-bot": {"key": AGENT_KEY, "labels": ["public", "agents"]},
    "finance-desk": {"key": FINANCE_KEY, "labels": ["public", "agents", "finance"]},
}


def test_a_key_resolves_to_its_own_id_and_labels() -> None:
    credentials = Credentials.from_mapping(CONFIG)
    caller = credentials.resolve(FINANCE_KEY)
    assert caller.key_id == "finance-desk"
    assert caller.labels == frozenset({"public", "agents", "finance"})
    assert credentials.resolve(AGENT_KEY).labels == frozenset({"public", "agents"})


def test_an_unknown_or_near_miss_key_is_refused() -> None:
    credentials = Credentials.from_mapping(CONFIG)
    for presented in ("", AGENT_KEY[:-1], AGENT_KEY + "x", AGENT_KEY.upper()):
        with pytest.raises(UnknownKey):
            credentials.resolve(presented)


def test_secrets_never_appear_in_repr_or_str() -> None:
    credentials = Credentials.from_mapping(CONFIG)
    for text in (repr(credentials), str(credentials)):
        assert AGENT_KEY not in text and FINANCE_KEY not in text
        assert "support-bot" in text and "finance" in text


def test_loaded_from_json_text_and_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(CONFIG), encoding="utf-8")
    assert Credentials.from_file(path).key_ids == ("support-bot", "finance-desk")
    assert Credentials.from_json(json.dumps(CONFIG)).resolve(AGENT_KEY).key_id == "support-bot"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param({"bot": {"key": "short-key", "labels": []}},
                     r"bot\.key: .*9 bytes; need at least 16", id="short-key"),
        pytest.param({"bot": {"key": AGENT_KEY, "labels": ["has space"]}},
                     r"bot\.labels: .*'has space'", id="bad-label"),
        pytest.param({"bot": {"key": AGENT_KEY, "labels": [], "scopes": []}},
                     r"bot\.scopes: Extra inputs", id="unknown-field"),
        pytest.param({"bot": {"labels": []}}, r"bot\.key: Field required", id="no-key"),
        pytest.param({"a": {"key": AGENT_KEY}, "b": {"key": AGENT_KEY}},
                     r"'a' and 'b' have the same key", id="shared-key"),
        pytest.param({"bad id!": {"key": AGENT_KEY}}, r"key id 'bad id!'", id="bad-id"),
        pytest.param({}, r"no API key is configured", id="empty"),
    ],
)
def test_bad_configuration_names_the_key_and_field(config: dict[str, object], expected: str
                                                   ) -> None:
    with pytest.raises(CredentialsError, match=expected):
        Credentials.from_mapping(config)


def test_bad_json_and_a_missing_file_say_so(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match="not valid JSON"):
        Credentials.from_json("{not json")
    with pytest.raises(CredentialsError, match="expected a JSON object"):
        Credentials.from_json("[1, 2]")
    missing = tmp_path / "nope.json"
    with pytest.raises(CredentialsError, match=r"nope\.json"):
        Credentials.from_file(missing)


def test_a_key_id_resolves_without_its_secret_and_an_unknown_id_is_named() -> None:
    credentials = Credentials.from_mapping(CONFIG)
    assert credentials.resolve_id("support-bot").labels == frozenset({"public", "agents"})
    with pytest.raises(UnknownKey, match=r"'nobody'.*\['support-bot', 'finance-desk'\]"):
        credentials.resolve_id("nobody")
