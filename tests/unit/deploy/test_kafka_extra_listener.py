"""deploy/local/services for a broker with more than the PLAINTEXT listener (a test's own)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from devservices.config import load_config
from devservices.services import ServiceError, _kafka_extra_properties


def test_extra_properties_and_scram_users_come_from_the_environment(tmp_path: Path) -> None:
    extra = tmp_path / "extra.properties"
    extra.write_text("listeners=PLAINTEXT://127.0.0.1:1,SECURE://127.0.0.1:2\n")
    cfg = load_config({**os.environ, "POLICY_INDEXER_LOCAL_KAFKA_EXTRA_PROPERTIES": str(extra),
                       "POLICY_INDEXER_LOCAL_KAFKA_SCRAM":
                           "SCRAM-SHA-512=[name=a,password=x]\n\nSCRAM-SHA-256=[name=b,password=y]\n"})
    assert cfg.kafka_scram_credentials == ("SCRAM-SHA-512=[name=a,password=x]",
                                           "SCRAM-SHA-256=[name=b,password=y]")
    text = _kafka_extra_properties(cfg)
    assert text.endswith("listeners=PLAINTEXT://127.0.0.1:1,SECURE://127.0.0.1:2\n\n")


def test_the_shared_stack_gets_nothing_extra() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_LOCAL_KAFKA")}
    cfg = load_config(env)
    assert cfg.kafka_extra_properties is None
    assert cfg.kafka_scram_credentials == ()
    assert _kafka_extra_properties(cfg) == ""


def test_a_missing_extra_properties_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.properties"
    cfg = load_config({**os.environ, "POLICY_INDEXER_LOCAL_KAFKA_EXTRA_PROPERTIES": str(missing)})
    with pytest.raises(ServiceError, match=f"_KAFKA_EXTRA_PROPERTIES={missing}"):
        _kafka_extra_properties(cfg)
