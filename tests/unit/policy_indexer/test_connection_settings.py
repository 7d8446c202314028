"""Production connection settings: secrets from files, masking, rules between them.

Bad inputs tried: a missing, empty, oversized or non-UTF-8 secret file; a
secret given both inline and as a file; SASL without credentials; a client
certificate without its key; an API key and a password together; a CA file
and a fingerprint together; min.insync.replicas above the replication factor;
a node URL that is not http(s).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from policy_indexer.cli import main
from policy_indexer.settings import MAX_SECRET_FILE_BYTES, Settings, mask_url


def test_a_secret_comes_from_its_file_without_the_trailing_newline(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("s3cr3t-pw\n")
    settings = Settings(elasticsearch_username="elastic", elasticsearch_password_file=secret)
    assert settings.elasticsearch_password is not None
    assert settings.elasticsearch_password.get_secret_value() == "s3cr3t-pw"


@pytest.mark.parametrize(
    ("content", "expected"),
    [(None, "cannot be read"), (b"", "is empty"), (b"\xff\xfe", "not UTF-8"),
     (b"x" * (MAX_SECRET_FILE_BYTES + 1), "larger than")],
)
def test_a_bad_secret_file_is_named_in_the_error(
    tmp_path: Path, content: bytes | None, expected: str
) -> None:
    secret = tmp_path / "pw"
    if content is not None:
        secret.write_bytes(content)
    with pytest.raises(ValidationError, match=expected) as excinfo:
        Settings(kafka_security_protocol="SASL_SSL", kafka_sasl_mechanism="SCRAM-SHA-512",
                 kafka_sasl_username="indexer", kafka_sasl_password_file=secret)
    assert "kafka_sasl_password_file" in str(excinfo.value)


def test_a_secret_set_twice_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "key"
    secret.write_text("from-file")
    with pytest.raises(ValidationError, match="not both"):
        Settings(elasticsearch_api_key="inline", elasticsearch_api_key_file=secret)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"kafka_security_protocol": "SASL_SSL"}, "needs kafka_sasl_mechanism"),
        ({"kafka_cert_file": "/c.pem"}, "go together"),
        ({"elasticsearch_api_key": "k", "elasticsearch_username": "u",
          "elasticsearch_password": "p"}, "not both"),
        ({"elasticsearch_username": "u"}, "go together"),
        ({"elasticsearch_ca_file": "/ca.pem", "elasticsearch_ca_fingerprint": "AB" * 32},
         "not both"),
        ({"kafka_min_insync_replicas": 2}, "no write would ever be acknowledged"),
        ({"elasticsearch_urls": "https://es-1:9200,ftp://es-2"}, "not an http"),
        ({"elasticsearch_ca_fingerprint": "not-hex"}, "pattern"),
        ({"kafka_sasl_mechanism": "GSSAPI"}, "kafka_sasl_mechanism"),
    ],
)
def test_settings_that_cannot_work_together_are_refused(
    values: dict[str, object], expected: str
) -> None:
    with pytest.raises(ValidationError, match=expected):
        Settings(**values)  # type: ignore[arg-type]


def test_several_nodes_win_over_the_single_url() -> None:
    settings = Settings(elasticsearch_urls=" https://es-1:9200, https://es-2:9200 ,")
    assert settings.elasticsearch_nodes() == ["https://es-1:9200", "https://es-2:9200"]
    assert Settings().elasticsearch_nodes() == ["http://127.0.0.1:9200"]


def test_mask_url_hides_user_and_password_only() -> None:
    assert mask_url("https://elastic:pw@es-1:9200/x") == "https://***@es-1:9200/x"
    assert mask_url("https://es-1:9200") == "https://es-1:9200"


def test_config_masks_secrets_from_a_secrets_dir_and_inside_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Kubernetes Secret mounted as a directory: one file per variable.
    (tmp_path / "POLICY_INDEXER_ELASTICSEARCH_PASSWORD").write_text("dir-secret-pw")
    monkeypatch.setenv("POLICY_INDEXER_SECRETS_DIR", str(tmp_path))
    monkeypatch.setenv("POLICY_INDEXER_ELASTICSEARCH_USERNAME", "indexer")
    monkeypatch.setenv("POLICY_INDEXER_ELASTICSEARCH_URLS",
                       "https://elastic:url-secret-pw@es-1:9200,https://es-2:9200")
    monkeypatch.setenv("POLICY_INDEXER_SOURCE_URL", "https://bot:cms-secret@cms.example/api")
    result = CliRunner().invoke(main, ["config"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed["elasticsearch_password"] == "**********", "the secrets dir was not read"
    assert printed["elasticsearch_urls"] == "https://***@es-1:9200,https://es-2:9200"
    assert printed["source_url"] == "https://***@cms.example/api"
    for secret in ("dir-secret-pw", "url-secret-pw", "cms-secret"):
        assert secret not in result.output


def test_a_rule_between_settings_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLICY_INDEXER_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    result = CliRunner().invoke(main, ["config"])
    assert result.exit_code == 2
    assert "kafka_security_protocol SASL_SSL needs kafka_sasl_mechanism" in result.output
    assert "Traceback" not in result.output
