"""The two encoders keep the ``Encoder`` contract, and their vectors mean something."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from embeddings.encoder import Encoder
from embeddings.errors import EncoderSetupError
from embeddings.hashing import HashingEncoder
from embeddings.minilm import MiniLMEncoder

REFUND = "Refunds: you can ask for your money back within 30 days of the purchase."
PARAPHRASE = "Customers may get a full refund if they request it within a month of buying."
UNRELATED = "Our data centre in Frankfurt stores backups of account data for seven days."
PINNED_HASHING_DIGEST = "176c731c51dd6b43"


@pytest.fixture(scope="module")
def minilm() -> MiniLMEncoder:
    return MiniLMEncoder()


def cos(encoder: Encoder, a: str, b: str) -> float:
    va, vb = encoder.encode([a, b])
    return float(va @ vb)


def check_contract(encoder: Encoder, texts: list[str]) -> np.ndarray:
    vectors = encoder.encode(texts)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(texts), encoder.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert encoder.encode([]).shape == (0, encoder.dim)
    return vectors


# -- HashingEncoder ----------------------------------------------------------------------------
def test_hashing_vectors_keep_the_contract_even_for_empty_and_tiny_texts() -> None:
    check_contract(HashingEncoder(), [REFUND, "", "a", "   ", "ümlaut ok 日本語"])
    assert HashingEncoder().model_id == "hashing-v1@384"
    assert HashingEncoder(dim=64).encode(["x y"]).shape == (1, 64)
    assert HashingEncoder(dim=64).model_id == "hashing-v1@64"


def test_hashing_shared_words_score_higher_than_unrelated_text() -> None:
    enc = HashingEncoder()
    assert cos(enc, REFUND, "Refunds within 30 days of purchase") > cos(enc, REFUND, UNRELATED)


def test_hashing_vectors_are_the_same_on_every_run_and_machine() -> None:
    # Pinned: a change of the feature function changes every vector, so it must come
    # with a new model_id (the cache key), never silently.
    vector = HashingEncoder().encode([REFUND])[0]
    assert hashlib.sha256(vector.round(6).tobytes()).hexdigest()[:16] == PINNED_HASHING_DIGEST


def test_hashing_ignores_case_and_runs_of_whitespace() -> None:
    enc = HashingEncoder()
    a, b = enc.encode(["Refund  within\n30 days", "refund within 30 DAYS"])
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dim", [0, 7, -1, 3.5])
def test_hashing_bad_dim_is_refused_naming_it(dim: object) -> None:
    with pytest.raises(EncoderSetupError, match=rf"dim must be .* got {dim!r}"):
        HashingEncoder(dim=dim)  # type: ignore[arg-type]


# -- MiniLM ------------------------------------------------------------------------------------
def test_minilm_vectors_keep_the_contract(minilm: MiniLMEncoder) -> None:
    check_contract(minilm, [REFUND, "", "x"])
    assert minilm.model_id == "all-MiniLM-L6-v2-int8@256"
    assert minilm.dim == 384


def test_minilm_a_paraphrase_is_closer_than_an_unrelated_text(minilm: MiniLMEncoder) -> None:
    para, unrelated = cos(minilm, REFUND, PARAPHRASE), cos(minilm, REFUND, UNRELATED)
    assert para > unrelated + 0.2, (para, unrelated)
    assert para > 0.5


def test_minilm_a_vector_does_not_depend_on_its_batch(minilm: MiniLMEncoder) -> None:
    """The cache stores a text's vector once: it must be what any batch would give."""
    alone = minilm.encode([REFUND])[0]
    long_neighbour = "policy " * 400  # pads REFUND's row to 256 tokens
    in_batch = minilm.encode([long_neighbour, UNRELATED, REFUND, PARAPHRASE])[2]
    np.testing.assert_allclose(alone, in_batch, atol=1e-5)


def test_minilm_kind_does_not_change_a_vector(minilm: MiniLMEncoder) -> None:
    q = minilm.encode([REFUND], kind="query")[0]
    p = minilm.encode([REFUND], kind="passage")[0]
    assert q.tobytes() == p.tobytes()


def test_minilm_text_past_max_length_is_cut_and_the_id_says_so() -> None:
    short = MiniLMEncoder(max_length=16)
    assert short.model_id == "all-MiniLM-L6-v2-int8@16"
    head = "refund policy " * 20
    a, b = short.encode([head, head + " but then something entirely about data centres"])
    assert a.tobytes() == b.tobytes()  # the tail is beyond 16 tokens


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_length": 1000}, r"max_length must be an integer in \[8, 512\], got 1000"),
    ({"batch_size": 0}, "batch_size must be an integer >= 1, got 0"),
    ({"threads": 0}, "threads must be an integer >= 1, got 0"),
])
def test_minilm_bad_settings_are_refused_naming_them(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(EncoderSetupError, match=message):
        MiniLMEncoder(**kwargs)  # type: ignore[arg-type]


def test_minilm_refuses_a_model_file_that_is_not_the_pinned_one(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"\x08\x07not the model")
    with pytest.raises(EncoderSetupError, match=r"model\.onnx.* has sha256 .* expected 8199be"):
        MiniLMEncoder(model_path=fake)


def test_minilm_refuses_a_missing_model_file_saying_where(tmp_path: Path) -> None:
    with pytest.raises(EncoderSetupError, match=r"nowhere\.onnx"):
        MiniLMEncoder(model_path=tmp_path / "nowhere.onnx")


def test_minilm_loads_and_encodes_with_every_network_connection_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing is downloaded at run time: the model and tokenizer come from installed files."""
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    encoder = MiniLMEncoder(max_length=32)
    assert encoder.encode([REFUND]).shape == (1, 384)
