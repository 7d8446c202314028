"""One secret-file rule: the search API keys' file follows it like every other ``_FILE``.

Inline or a file, never both; the file read when the settings load, so a bad
file stops the process at start, naming the setting.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from policy_indexer.runtime.search import SearchNotConfigured, credentials
from policy_indexer.settings import SECRET_FILE_SETTINGS, Settings

KEYS = {"agent": {"key": "k" * 20, "labels": ["public"]}}


def test_every_file_form_is_a_setting_beside_its_secret() -> None:
    for name in SECRET_FILE_SETTINGS:
        assert {name, f"{name}_file"} <= set(Settings.model_fields), name


def test_the_api_keys_come_from_their_file(tmp_path: Path) -> None:
    path = tmp_path / "api-keys.json"
    path.write_text(json.dumps(KEYS) + "\n")
    settings = Settings(search_api_keys_file=path)
    assert settings.search_api_keys is not None
    assert json.loads(settings.search_api_keys.get_secret_value()) == KEYS
    assert credentials(settings).key_ids == ("agent",)


def test_the_api_keys_inline_and_in_a_file_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "api-keys.json"
    path.write_text(json.dumps(KEYS))
    with pytest.raises(ValidationError, match="search_api_keys or search_api_keys_file, not both"):
        Settings(search_api_keys=json.dumps(KEYS), search_api_keys_file=path)


def test_a_missing_api_keys_file_stops_the_settings(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"search_api_keys_file .* cannot be read"):
        Settings(search_api_keys_file=tmp_path / "absent.json")


def test_a_bad_api_keys_file_is_named_by_its_variable(tmp_path: Path) -> None:
    path = tmp_path / "api-keys.json"
    path.write_text("not json")
    with pytest.raises(SearchNotConfigured, match=r"^POLICY_INDEXER_SEARCH_API_KEYS_FILE='.*"
                                                  r"api-keys.json' is not JSON"):
        credentials(Settings(search_api_keys_file=path))
