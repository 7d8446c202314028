"""POLICY_INDEXER_ENCODERS and the default views, as the search and the backfill build them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import embeddings.packaged
from embeddings.cache import InMemoryEmbeddingCache
from embeddings.errors import EncoderSetupError
from embeddings.views import DEFAULT_VIEWS
from policy_indexer.runtime.search import make_views
from policy_indexer.settings import Settings


def views(monkeypatch: pytest.MonkeyPatch, **settings: str) -> list[str]:
    for key in list(os.environ):
        if key.startswith("POLICY_INDEXER_"):
            monkeypatch.delenv(key)
    built = make_views(Settings(**settings), InMemoryEmbeddingCache(), None)  # type: ignore[arg-type]
    return [v.view_id + (":" + "/".join(sorted(v.languages)) if v.languages else "")
            for v in built]


def no_models(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(embeddings.packaged, "default_models_dir", lambda: tmp_path)


def test_the_default_is_minilm_windows_and_bge_windows_for_english(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not (embeddings.packaged.default_models_dir() / "bge-small-en-v1.5-q.onnx").exists():
        pytest.skip("bge-small is not installed here (scripts/install --models)")
    assert DEFAULT_VIEWS == "minilm+w150s75,bge-small+w150s75:en"
    assert views(monkeypatch) == ["all-MiniLM-L6-v2-int8@256+w150s75",
                                  "bge-small-en-v1.5-int8@512+w150s75:en"]


def test_without_the_maven_models_the_default_keeps_minilm_and_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    no_models(monkeypatch, tmp_path)
    assert views(monkeypatch) == ["all-MiniLM-L6-v2-int8@256+w150s75"]


def test_a_configured_view_whose_model_is_missing_stops_the_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    no_models(monkeypatch, tmp_path)
    with pytest.raises(EncoderSetupError, match="scripts/install --models"):
        views(monkeypatch, encoders="minilm,bge-small")


@pytest.mark.parametrize(("settings", "expected"), [
    ({"search_encoder": "none"}, []),
    ({"encoders": ""}, []),
    ({"encoders": "hashing,hashing+w40s20*0.5:en"},
     ["hashing-v1@384", "hashing-v1@384+w40s20:en"]),
    ({"search_encoder": "hashing"}, ["hashing-v1@384"]),
])
def test_the_configured_list_is_what_it_says(
    monkeypatch: pytest.MonkeyPatch, settings: dict[str, str], expected: list[str],
) -> None:
    assert views(monkeypatch, **settings) == expected


@pytest.mark.parametrize("bad", ["word2vec", "minilm+w5", "minilm,minilm", "hashing:en,minilm"])
def test_a_bad_list_is_refused_when_the_settings_load(bad: str) -> None:
    with pytest.raises(ValueError, match=r"encoder|window|twice|primary"):
        make_views(Settings(encoders=bad), InMemoryEmbeddingCache(), None)
