"""The ONNX sentence encoders (MiniLM, bge-small, e5-small) keep the ``Encoder`` contract.

bge-small and e5-small read their files from the models directory that
``scripts/install --models`` fills (``.local/models``); their tests are skipped, saying
so, only when those files are absent. The error tests need no model.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path

import numpy as np
import pytest

from embeddings.encoder import Encoder
from embeddings.errors import EncoderSetupError
from embeddings.minilm import MiniLMEncoder
from embeddings.onnx_encoder import OnnxModelSpec, OnnxSentenceEncoder
from embeddings.packaged import (
    BGE_QUERY_INSTRUCTION,
    BGE_SMALL,
    E5_SMALL,
    LANGCHAIN4J_VERSION,
    MAVEN_ARTIFACTS,
    BgeSmallEncoder,
    E5SmallEncoder,
    default_models_dir,
)
from embeddings.registry import ENCODER_NAMES, encoder_by_name

QUERY = "How long do I have to ask for my money back?"
RELEVANT = ("Refunds: you can ask for your money back within 30 days of the purchase, "
            "by writing to support with your order number.")
UNRELATED = "Our data centre in Frankfurt stores backups of account data for seven days."
OTHERS = [UNRELATED, "policy " * 400, "", "x", "Employees accrue 25 days of paid leave a year."]

MODELS = default_models_dir()
SPECS = {"bge-small": BGE_SMALL, "e5-small": E5_SMALL}
MODEL_IDS = {"minilm": "all-MiniLM-L6-v2-int8@256", "bge-small": "bge-small-en-v1.5-int8@512",
             "e5-small": "e5-small-v2-int8@512"}


def needs_files(spec: OnnxModelSpec) -> None:
    missing = [n for n in (spec.model_file, spec.tokenizer_file) if not (MODELS / n).is_file()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not in {MODELS}: run scripts/install --models")


@pytest.fixture(scope="module", params=["minilm", "bge-small", "e5-small"])
def named(request: pytest.FixtureRequest) -> tuple[str, Encoder]:
    name: str = request.param
    if name in SPECS:
        needs_files(SPECS[name])
    return name, encoder_by_name(name, threads=2)


def test_every_encoder_gives_unit_float32_rows_of_its_dim(named: tuple[str, Encoder]) -> None:
    name, encoder = named
    assert encoder.model_id == MODEL_IDS[name]
    assert encoder.dim == 384
    for kind in ("query", "passage"):
        vectors = encoder.encode([RELEVANT, *OTHERS], kind=kind)
        assert vectors.dtype == np.float32 and vectors.shape == (1 + len(OTHERS), 384)
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert encoder.encode([]).shape == (0, 384)


def test_a_vector_does_not_depend_on_its_batch(named: tuple[str, Encoder]) -> None:
    """The cache stores a text's vector once: any batch must give that vector."""
    name, encoder = named
    for kind in ("query", "passage"):
        alone = encoder.encode([RELEVANT], kind=kind)[0]
        for batch in ([*OTHERS, RELEVANT], [RELEVANT, OTHERS[1]], [OTHERS[0], RELEVANT, QUERY]):
            row = encoder.encode(batch, kind=kind)[batch.index(RELEVANT)]
            if name == "minilm":  # static int8 weights, fp32 activations: padding is masked
                np.testing.assert_allclose(alone, row, atol=1e-5)
            else:  # int8 activations: every text runs alone, so exactly the same
                assert row.tobytes() == alone.tobytes(), (name, kind, batch.index(RELEVANT))
    assert encoder.encode([RELEVANT, RELEVANT]).tobytes() == encoder.encode(
        [RELEVANT, RELEVANT]).tobytes()


def test_the_relevant_passage_scores_above_the_unrelated_one(named: tuple[str, Encoder]) -> None:
    name, encoder = named
    query = encoder.encode([QUERY], kind="query")[0]
    relevant, unrelated = encoder.encode([RELEVANT, UNRELATED], kind="passage")
    assert float(query @ relevant) > float(query @ unrelated) + 0.05, name


def test_queries_and_passages_differ_only_for_the_asymmetric_models(
    named: tuple[str, Encoder],
) -> None:
    name, encoder = named
    as_query = encoder.encode([RELEVANT], kind="query")[0]
    as_passage = encoder.encode([RELEVANT], kind="passage")[0]
    if name == "minilm":
        assert as_query.tobytes() == as_passage.tobytes()
    else:
        assert as_query.tobytes() != as_passage.tobytes()
        assert float(as_query @ as_passage) > 0.8  # the same text, another prefix


def test_the_prefixes_are_the_models_own() -> None:
    assert (BGE_SMALL.query_prefix, BGE_SMALL.passage_prefix) == (BGE_QUERY_INSTRUCTION, "")
    assert BGE_QUERY_INSTRUCTION == "Represent this sentence for searching relevant passages: "
    assert (E5_SMALL.query_prefix, E5_SMALL.passage_prefix) == ("query: ", "passage: ")
    assert (BGE_SMALL.pooling, E5_SMALL.pooling) == ("cls", "mean")


@pytest.mark.parametrize("spec", [BGE_SMALL, E5_SMALL], ids=lambda s: s.label)
def test_max_length_is_in_the_model_id_and_cuts_the_text(spec: OnnxModelSpec) -> None:
    needs_files(spec)
    short = OnnxSentenceEncoder(spec, models_dir=MODELS, max_length=16)
    assert short.model_id == f"{spec.name}@16"
    head = "refund policy " * 20
    a, b = short.encode([head, head + " but then something entirely about data centres"])
    assert a.tobytes() == b.tobytes()


# -- errors: one line, naming the file and the install command (no model needed) ------------
@pytest.mark.parametrize("spec", [BGE_SMALL, E5_SMALL], ids=lambda s: s.label)
def test_a_missing_file_is_one_line_naming_it_and_the_install_command(
    spec: OnnxModelSpec, tmp_path: Path,
) -> None:
    with pytest.raises(EncoderSetupError) as caught:
        OnnxSentenceEncoder(spec, models_dir=tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(tmp_path / spec.tokenizer_file) in message and "is missing" in message
    assert message.endswith("run scripts/install --models")


@pytest.mark.parametrize("spec", [BGE_SMALL, E5_SMALL], ids=lambda s: s.label)
def test_a_file_with_another_sha256_is_refused_in_one_line(
    spec: OnnxModelSpec, tmp_path: Path,
) -> None:
    (tmp_path / spec.tokenizer_file).write_text("{}", encoding="utf-8")
    with pytest.raises(EncoderSetupError) as caught:
        OnnxSentenceEncoder(spec, models_dir=tmp_path)
    message = str(caught.value)
    assert "\n" not in message
    assert f"{spec.tokenizer_file}' has sha256 44136fa3" in message
    assert f"expected {spec.tokenizer_sha256}; run scripts/install --models" in message


@pytest.mark.parametrize("spec", [BGE_SMALL, E5_SMALL], ids=lambda s: s.label)
def test_a_model_missing_or_with_another_sha256_is_refused_in_one_line(
    spec: OnnxModelSpec, tmp_path: Path,
) -> None:
    needs_files(spec)  # the real tokenizer, so the model is what fails
    (tmp_path / spec.tokenizer_file).symlink_to(MODELS / spec.tokenizer_file)
    with pytest.raises(EncoderSetupError, match=rf"^the {spec.label} model '.*{spec.model_file}' "
                       r"is missing; run scripts/install --models$"):
        OnnxSentenceEncoder(spec, models_dir=tmp_path)
    (tmp_path / spec.model_file).write_bytes(b"\x08\x07not the model")
    with pytest.raises(EncoderSetupError, match=rf"^the {spec.label} model .* has sha256 "
                       rf"[0-9a-f]{{64}}, expected {spec.model_sha256}; run scripts/install "
                       r"--models$"):
        OnnxSentenceEncoder(spec, models_dir=tmp_path)


def test_a_batch_of_more_than_one_is_refused_for_the_int8_activation_models(
    tmp_path: Path,
) -> None:
    with pytest.raises(EncoderSetupError, match="batch_size must be 1 for e5-small-v2-int8"):
        OnnxSentenceEncoder(E5_SMALL, models_dir=tmp_path, batch_size=8)


@pytest.mark.parametrize("max_length", [7, 513])
def test_max_length_beyond_the_positions_is_refused(max_length: int, tmp_path: Path) -> None:
    with pytest.raises(EncoderSetupError, match=r"max_length must be an integer in \[8, 512\]"):
        BgeSmallEncoder(models_dir=tmp_path, max_length=max_length)


def test_the_registry_knows_every_name_and_refuses_others(tmp_path: Path) -> None:
    assert ENCODER_NAMES == ("minilm", "bge-small", "e5-small", "hashing")
    assert encoder_by_name("hashing", threads=1).model_id == "hashing-v1@384"
    assert isinstance(encoder_by_name("minilm", threads=1), MiniLMEncoder)
    with pytest.raises(EncoderSetupError, match=r"^unknown encoder 'bge'; known: minilm, "):
        encoder_by_name("bge", threads=1)
    with pytest.raises(EncoderSetupError, match=r"e5-small-v2-q-tokenizer\.json' is missing"):
        encoder_by_name("e5-small", threads=1, models_dir=tmp_path)


def test_the_default_models_dir_is_the_checkouts() -> None:
    assert default_models_dir() == Path(__file__).resolve().parents[3] / ".local" / "models"


def test_the_packaged_encoders_load_and_encode_with_the_network_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing is downloaded at run time: the files come from the models directory."""
    needs_files(BGE_SMALL)
    needs_files(E5_SMALL)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    for encoder in (BgeSmallEncoder(threads=1), E5SmallEncoder(threads=1)):
        assert encoder.encode([RELEVANT], kind="query").shape == (1, 384)


def test_scripts_install_fetches_the_files_the_specs_pin() -> None:
    """scripts/install --models and embeddings/packaged.py name the same jars and sha256s."""
    script = (Path(__file__).resolve().parents[3] / "scripts" / "install").read_text("utf-8")
    version = re.search(r"^LANGCHAIN4J_VERSION=(\S+)$", script, flags=re.MULTILINE)
    assert version is not None and version.group(1) == LANGCHAIN4J_VERSION
    rows = re.findall(r'^\s+"(langchain4j-[^"|]+)\|([^"|]+)\|([0-9a-f]{64})\|([^"|]+)\|'
                      r'([0-9a-f]{64})"$', script, flags=re.MULTILINE)
    assert sorted(rows) == sorted(
        (MAVEN_ARTIFACTS[s.name].split(":")[1], s.model_file, s.model_sha256,
         s.tokenizer_file, s.tokenizer_sha256) for s in (BGE_SMALL, E5_SMALL))
