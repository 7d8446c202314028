"""The cluster option that makes one broker advertise another port (a proxy in front of it):
off by default, each broker then advertising its own port, and refused when malformed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from devservices import cluster
from devservices.cluster import load_cluster
from devservices.config import load_config

KEY = "POLICY_INDEXER_LOCAL_CLUSTER_KAFKA_ADVERTISED_PORTS"


def _properties(env: dict[str, str], tmp_path: Path, broker: int,
                monkeypatch: pytest.MonkeyPatch) -> str:
    cfg, layout = load_cluster(env, load_config(env))
    cfg = dataclasses.replace(cfg, state_dir=tmp_path)
    written: list[str] = []
    monkeypatch.setattr(cluster, "kafka_launch",
                        lambda _cfg, _home, props, *_a, **_k: written.append(props))
    cluster._prepare_kafka(layout, broker, cfg)
    return written[0]


def test_by_default_every_broker_advertises_its_own_port(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env: dict[str, str] = {}
    _cfg, layout = load_cluster(env, load_config(env))
    assert [layout.advertised(i) for i in layout.indices] == [19092, 19093, 19094]
    props = _properties(env, tmp_path, 3, monkeypatch)
    assert "advertised.listeners=PLAINTEXT://127.0.0.1:19094\n" in props


def test_a_broker_named_advertises_the_port_given_and_still_listens_on_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {KEY: "3=40123"}
    _cfg, layout = load_cluster(env, load_config(env))
    assert [layout.advertised(i) for i in layout.indices] == [19092, 19093, 40123]
    props = _properties(env, tmp_path, 3, monkeypatch)
    assert "advertised.listeners=PLAINTEXT://127.0.0.1:40123\n" in props
    assert "listeners=PLAINTEXT://127.0.0.1:19094," in props
    assert "PLAINTEXT://127.0.0.1:40123" not in _properties(env, tmp_path, 2, monkeypatch)


@pytest.mark.parametrize("value", ["3", "4=40123", "x=1", "2=0", "2=70000", "2=port"])
def test_a_malformed_value_is_refused(value: str) -> None:
    env = {KEY: value}
    with pytest.raises(SystemExit, match=KEY):
        load_cluster(env, load_config(env))
