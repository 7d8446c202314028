"""The encoder's speed settings leave its vectors where they were.

The embedding cache is keyed by ``model_id`` and text, so a setting that moved a
vector beyond float tolerance would mix two encoders under one id. The pinned
vectors (``data/minilm_pinned_vectors.json``) are four chunks of
``examples/library`` as the encoder gave them before any speed setting existed;
every setting must stay at cosine >= 0.9999 from them, or come with a new
``model_id``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from embeddings.minilm import MODEL_SHA256, MiniLMEncoder, optimized_model_name

PINNED = Path(__file__).parent / "data" / "minilm_pinned_vectors.json"
MIN_COSINE = 0.9999


def pinned() -> tuple[str, list[str], npt.NDArray[np.float32]]:
    doc = json.loads(PINNED.read_text(encoding="utf-8"))
    vectors = np.stack([np.frombuffer(base64.b64decode(v), dtype="<f4") for v in doc["vectors"]])
    return doc["model_id"], doc["texts"], vectors


def assert_as_pinned(encoder: MiniLMEncoder) -> None:
    model_id, texts, expected = pinned()
    assert encoder.model_id == model_id
    cosines = np.sum(encoder.encode(texts) * expected, axis=1)
    assert cosines.min() >= MIN_COSINE, cosines


def test_the_pinned_texts_are_short_and_long_chunks() -> None:
    _, texts, vectors = pinned()
    assert len(texts) == 4 and vectors.shape == (4, 384)
    assert max(len(t) for t in texts) > 1000  # one is cut at 256 tokens


@pytest.mark.parametrize("kwargs", [
    {},
    {"spinning": False},
    {"spinning": True},
    {"threads": 1},
    {"batch_size": 1},
    {"batch_size": 32},
], ids=repr)
def test_every_speed_setting_gives_the_pinned_vectors(kwargs: dict[str, object]) -> None:
    assert_as_pinned(MiniLMEncoder(**kwargs))  # type: ignore[arg-type]


def test_the_optimised_graph_is_cached_once_and_gives_the_pinned_vectors(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "onnx"
    assert_as_pinned(MiniLMEncoder(optimized_model_dir=cache))  # writes it
    written = sorted(p.name for p in cache.iterdir())
    assert written == [optimized_model_name(MODEL_SHA256)]  # nothing left aside
    assert MODEL_SHA256[:32] in written[0]
    stamp = (cache / written[0]).stat().st_mtime_ns
    assert_as_pinned(MiniLMEncoder(optimized_model_dir=cache))  # reads it
    assert (cache / written[0]).stat().st_mtime_ns == stamp


def test_a_damaged_cached_graph_is_removed_and_the_model_runs_anyway(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    damaged = tmp_path / optimized_model_name(MODEL_SHA256)
    damaged.write_bytes(b"\x08\x07half a graph")
    assert_as_pinned(MiniLMEncoder(optimized_model_dir=tmp_path))
    assert not damaged.exists()
    assert "cannot load the optimised MiniLM graph" in caplog.text


def test_a_cache_dir_that_cannot_be_made_is_logged_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    assert_as_pinned(MiniLMEncoder(optimized_model_dir=blocker / "onnx"))
    assert "cannot write the optimised MiniLM graph" in caplog.text
