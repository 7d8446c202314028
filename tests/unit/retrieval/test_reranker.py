"""The cross-encoder reranker, on a tiny cross-encoder this test builds (nothing downloaded).

The graph looks up one weight per token id and sums the weights of the
passage's tokens (``attention_mask * token_type_ids``): a passage holding
"good" scores 1 a time, "refund" 0.25, anything else 0, and the question's own
tokens never count (so the pair must be tokenized as a pair). The tokenizer is
a WordLevel one with BERT's pair template, saved as ``tokenizer.json`` beside
the model, as a deployment's export is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper
from support.chunks import make_chunk
from tokenizers import Tokenizer, models, pre_tokenizers, processors

from chunker.model import Chunk
from policy_indexer.cli import main
from policy_indexer.runtime.search import SearchNotConfigured, make_reranker
from policy_indexer.settings import Settings
from retrieval.models import SearchRequest
from retrieval.rerank import BATCH_SIZE, OnnxCrossEncoder, RerankerSetupError, WithThreshold
from retrieval.service import SearchService
from store.memory import InMemoryStore
from store.memory_search import InMemorySearchIndex
from store.model import DocumentState

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "good", "refund", "scooter", "tyre", "window"]
WEIGHTS = {"good": 1.0, "refund": 0.25}
DAY = date(2027, 4, 1)
T0 = datetime(2027, 1, 1, tzinfo=UTC)


def tiny_graph(*, token_types: bool = True, ids_name: str = "input_ids",
               length: int | str = "length") -> onnx.ModelProto:
    weights = np.zeros((len(VOCAB), 1), dtype=np.float32)
    for token, weight in WEIGHTS.items():
        weights[VOCAB.index(token), 0] = weight
    nodes = [
        helper.make_node("Gather", ["weights", ids_name], ["looked_up"], axis=0),
        helper.make_node("Squeeze", ["looked_up", "last"], ["per_token"]),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["per_token", "mask"], ["kept"]),
    ]
    if token_types:  # only the passage's tokens count
        nodes += [helper.make_node("Cast", ["token_type_ids"], ["types"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", ["kept", "types"], ["counted"])]
    nodes.append(helper.make_node("ReduceSum", ["counted" if token_types else "kept", "seq"],
                                  ["logits"], keepdims=1))
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", length])
              for name in (ids_name, "attention_mask", *(["token_type_ids"] * token_types))]
    graph = helper.make_graph(
        nodes, "tiny-cross-encoder", inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        [numpy_helper.from_array(weights, "weights"),
         numpy_helper.from_array(np.array([2], dtype=np.int64), "last"),
         numpy_helper.from_array(np.array([1], dtype=np.int64), "seq")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def tiny_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(models.WordLevel({t: i for i, t in enumerate(VOCAB)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    return tokenizer


def export(folder: Path, model: onnx.ModelProto | None = None, *,
           tokenizer: bool = True) -> tuple[Path, str]:
    """The model file and its sha256, with ``tokenizer.json`` beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    data = (model or tiny_graph()).SerializeToString()
    path.write_bytes(data)
    if tokenizer:
        tiny_tokenizer().save(str(folder / "tokenizer.json"))
    return path, hashlib.sha256(data).hexdigest()


@pytest.fixture
def tiny(tmp_path: Path) -> OnnxCrossEncoder:
    path, sha256 = export(tmp_path / "tiny")
    return OnnxCrossEncoder(path, sha256=sha256, threshold=0.5, max_length=64)


# -- loading and scoring ---------------------------------------------------------
def test_the_tiny_cross_encoder_scores_a_crafted_pair_in_the_expected_order(
    tiny: OnnxCrossEncoder,
) -> None:
    texts = ["scooter tyre", "a good refund window", "refund window", "good"]
    scores = tiny.score("good refund", texts)
    assert scores == pytest.approx([0.0, 1.25, 0.25, 1.0])
    # the question's own tokens never count: the pair was tokenized as a pair
    assert tiny.score("good good good", ["tyre"]) == [0.0]
    assert tiny.threshold == 0.5
    assert tiny.model_id.startswith("model-") and tiny.model_id.endswith("@64")


def test_scores_do_not_depend_on_the_batch_or_its_padding(tiny: OnnxCrossEncoder) -> None:
    texts = [" ".join(["good"] * (i % 7) + ["tyre"] * i) for i in range(BATCH_SIZE * 2 + 3)]
    together = tiny.score("refund", texts)
    alone = [tiny.score("refund", [t])[0] for t in texts]
    assert together == pytest.approx(alone)
    assert tiny.score("refund", []) == []


def test_pairs_are_cut_at_max_length(tmp_path: Path) -> None:
    path, sha256 = export(tmp_path / "tiny")
    short = OnnxCrossEncoder(path, sha256=sha256, threshold=0.5, max_length=8)
    # [CLS] tyre [SEP] good good good good [SEP]: 8 tokens, the other 4 "good" are cut
    assert short.score("tyre", ["good good good good good good good good"]) == [4.0]


def test_a_graph_without_token_type_ids_is_fed_without_them(tmp_path: Path) -> None:
    path, sha256 = export(tmp_path / "tiny", tiny_graph(token_types=False))
    plain = OnnxCrossEncoder(path, sha256=sha256, threshold=0.5, max_length=64)
    assert plain.score("good", ["tyre", "good"]) == pytest.approx([1.0, 2.0])


# -- a bad file is one line at start ----------------------------------------------
def one_line_error(path: Path, sha256: str, **kw: Any) -> str:
    with pytest.raises(RerankerSetupError) as caught:
        OnnxCrossEncoder(path, sha256=sha256, threshold=0.5, **kw)
    message = str(caught.value)
    assert "\n" not in message and message
    return message


def test_a_bad_path_is_a_one_line_error(tmp_path: Path) -> None:
    message = one_line_error(tmp_path / "nowhere" / "model.onnx", "0" * 64)
    assert "cannot read the reranker model" in message and "nowhere" in message


def test_a_missing_tokenizer_is_a_one_line_error(tmp_path: Path) -> None:
    path, sha256 = export(tmp_path / "tiny", tokenizer=False)
    assert "no tokenizer beside the reranker model" in one_line_error(path, sha256)
    (path.parent / "tokenizer.json").write_text("{ not json", encoding="utf-8")
    assert "cannot read the reranker tokenizer" in one_line_error(path, sha256)


def test_a_wrong_sha256_is_a_one_line_error(tmp_path: Path) -> None:
    path, sha256 = export(tmp_path / "tiny")
    message = one_line_error(path, "f" * 64)
    assert f"has sha256 {sha256}, expected {'f' * 64}" in message


def test_a_file_that_is_no_model_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "tiny" / "model.onnx"
    export(tmp_path / "tiny")
    path.write_bytes(b"not an onnx file\n" * 10)
    message = one_line_error(path, hashlib.sha256(path.read_bytes()).hexdigest())
    assert "onnxruntime cannot load" in message


def test_a_graph_without_the_expected_inputs_is_a_one_line_error(tmp_path: Path) -> None:
    path, sha256 = export(tmp_path / "tiny", tiny_graph(ids_name="ids"))
    assert "expected input_ids, attention_mask" in one_line_error(path, sha256)


def test_a_max_length_beyond_the_model_is_a_one_line_error_at_start(tmp_path: Path) -> None:
    path, sha256 = export(tmp_path / "tiny", tiny_graph(length=16))
    OnnxCrossEncoder(path, sha256=sha256, threshold=0.5, max_length=16)
    assert "does not run on 32 tokens" in one_line_error(path, sha256, max_length=32)


# -- settings and the composition root ---------------------------------------------
def reranker_settings(path: Path, sha256: str, **more: Any) -> Settings:
    return Settings(reranker_path=path, reranker_sha256=sha256, reranker_threshold=0.5, **more)


def test_settings_require_the_sha256_and_the_threshold_with_a_path(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="reranker_path needs reranker_threshold"):
        Settings(reranker_path=tmp_path / "m.onnx", reranker_sha256="a" * 64)
    with pytest.raises(ValueError, match="reranker_path needs reranker_sha256"):
        Settings(reranker_path=tmp_path / "m.onnx", reranker_threshold=1.0)
    with pytest.raises(ValueError, match="reranker_threshold set without reranker_path"):
        Settings(reranker_threshold=1.0)
    with pytest.raises(ValueError, match="reranker_sha256"):
        reranker_settings(tmp_path / "m.onnx", "abc")
    for candidates in (0, 201):
        with pytest.raises(ValueError, match="reranker_candidates"):
            reranker_settings(tmp_path / "m.onnx", "a" * 64, reranker_candidates=candidates)
    assert Settings().reranker_path is None and Settings().reranker_candidates == 30


def test_the_composition_root_builds_it_or_names_the_setting(tmp_path: Path) -> None:
    assert make_reranker(Settings()) is None
    path, sha256 = export(tmp_path / "tiny")
    built = make_reranker(reranker_settings(path, sha256.upper(), reranker_max_length=64))
    assert built is not None and built.threshold == 0.5
    with pytest.raises(SearchNotConfigured, match=r"^POLICY_INDEXER_RERANKER_PATH: .*sha256"):
        make_reranker(reranker_settings(path, "0" * 64))


def test_policy_indexer_search_fails_at_start_with_the_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, _sha256 = export(tmp_path / "tiny")
    monkeypatch.chdir(tmp_path)  # no .env of the working tree
    env = {
        "POLICY_INDEXER_EMBEDDED_DIR": str(tmp_path / "data"),
        "POLICY_INDEXER_LANGUAGE_MODEL_CACHE_DIR": str(tmp_path / "cache"),
        "POLICY_INDEXER_SEARCH_ENCODER": "none",
        "POLICY_INDEXER_RERANKER_PATH": str(path),
        "POLICY_INDEXER_RERANKER_SHA256": "0" * 64,
        "POLICY_INDEXER_RERANKER_THRESHOLD": "0.5",
    }
    result = CliRunner().invoke(main, ["search", "good refund"], env=env)
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if "RERANKER" in line]
    assert len(lines) == 1 and "has sha256" in lines[0], result.output


# -- in the search ----------------------------------------------------------------
class Recording:
    """A reranker that remembers every text it was given."""

    def __init__(self, inner: OnnxCrossEncoder) -> None:
        self.inner = inner
        self.seen: list[str] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def threshold(self) -> float:
        return self.inner.threshold

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        self.seen += texts
        return self.inner.score(question, texts)


def chunk(doc: str, text: str, **meta: Any) -> Chunk:
    return make_chunk(doc, 1, "s", text=text, heading_path=[f"{doc} policy", "s"],
                      metadata={"title": f"{doc} policy", "language": "en", **meta})


def library(*chunks: Chunk) -> InMemorySearchIndex:
    store = InMemoryStore()
    store.write_chunks(chunks)
    for c in chunks:
        store.put_state(DocumentState(c.document_id, c.version, T0, T0, (c.chunk_id,)))
    return InMemorySearchIndex(store)


def ask(question: str, **kw: Any) -> SearchRequest:
    return SearchRequest(question=question, as_of=DAY, neighbours=False, **kw)


def test_the_reranker_s_favourite_comes_first_and_its_threshold_decides(
    tiny: OnnxCrossEncoder,
) -> None:
    index = library(
        chunk("window", "refund window refund window refund window"),
        chunk("tyre", "scooter tyre refund"),
        chunk("kind", "a good refund"),
    )
    plain = SearchService(index, None, clock=lambda: DAY)
    reranked = SearchService(index, None, clock=lambda: DAY, reranker=tiny)
    before = plain.search(ask("refund window"), frozenset())
    after = reranked.search(ask("refund window"), frozenset())
    assert before.passages[0].document_id == "window"
    assert [p.document_id for p in after.passages] == ["kind", "window", "tyre"]
    assert [p.score for p in after.passages] == pytest.approx([1.25, 0.75, 0.25])
    assert (after.status, after.best_score, after.threshold) == ("ok", 1.25, 0.5)
    assert after.legs == before.legs == ["keyword"]  # the reranker is not a leg
    # no passage with "good": the keyword leg would answer, the reranker refuses
    index = library(chunk("window", "refund window"), chunk("tyre", "scooter tyre refund"))
    assert SearchService(index, None, clock=lambda: DAY).search(
        ask("refund window"), frozenset()).status == "ok"
    refused = SearchService(index, None, clock=lambda: DAY, reranker=tiny).search(
        ask("refund window"), frozenset())
    assert (refused.status, refused.passages, refused.threshold) == ("no_document", [], 0.5)
    assert refused.best_score == pytest.approx(0.25)


def test_only_the_top_candidates_are_rescored(tiny: OnnxCrossEncoder) -> None:
    index = library(*(chunk(f"d{i}", "refund " * (9 - i) + "good " * i) for i in range(6)))
    recording = Recording(tiny)
    service = SearchService(index, None, clock=lambda: DAY, reranker=recording,
                            reranker_candidates=2)
    response = service.search(ask("refund", k=4), frozenset())
    assert len(recording.seen) == 2
    assert len(response.passages) == 4


def test_no_chunk_the_caller_may_not_see_ever_reaches_the_reranker(
    tiny: OnnxCrossEncoder,
) -> None:
    index = library(
        chunk("public", "a good refund window", access_labels=["public"]),
        chunk("staff", "good good refund codes for staff", access_labels=["staff"]),
        chunk("lisbon", "good refund in lisbon", access_labels=["public"], scope=["lisbon"]),
        chunk("expired", "good refund until march", access_labels=["public"],
              valid_to=date(2027, 3, 1)),
    )
    recording = Recording(tiny)
    service = SearchService(index, None, clock=lambda: DAY, reranker=recording)
    public = service.search(ask("refund", scope=["porto"]), frozenset({"public"}))
    assert [p.document_id for p in public.passages] == ["public"]
    hidden = ("staff", "lisbon", "march")
    assert recording.seen and not any(w in t for w in hidden for t in recording.seen)
    recording.seen.clear()
    staff = service.search(ask("refund", scope=["porto"]), frozenset({"public", "staff"}))
    assert [p.document_id for p in staff.passages] == ["staff", "public"]
    assert not any(w in t for w in hidden[1:] for t in recording.seen)


def test_eval_asks_again_with_the_reranker_s_threshold_off(tiny: OnnxCrossEncoder) -> None:
    off = WithThreshold(tiny, -1e9)
    assert off.model_id == tiny.model_id and off.score("x", ["good"]) == [1.0]
    index = library(chunk("tyre", "scooter tyre refund"))
    service = SearchService(index, None, clock=lambda: DAY, reranker=off)
    assert service.search(ask("tyre refund"), frozenset()).status == "ok"
