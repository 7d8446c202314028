"""A cross-encoder that rescores the fused top, where the deployment has one.

No cross-encoder ships in a package we can install, so none is on by default:
a deployment that has an ONNX export of one (ms-marco-MiniLM-L-6-v2, say, made
on a machine with internet access: docs/search.md) points
``POLICY_INDEXER_RERANKER_PATH`` at its ``.onnx`` file, with its
``tokenizer.json`` beside it. Nothing is downloaded, ever.

``OnnxCrossEncoder`` checks everything when it is built, so that a bad file is
one line at start and never an error at the first search: the file's sha256
against the pinned one, the tokenizer beside it, the graph's inputs
(``input_ids`` and ``attention_mask``; ``token_type_ids`` fed only when the
graph declares it) and one run at ``max_length`` tokens (a length beyond the
model's positions fails here). Each question/passage pair is tokenized as a
pair, cut at ``max_length`` (longest first) and padded per batch; a pair's
score is its first logit (or the only output column). A cross-encoder's logit
scale is its own, so its no-document ``threshold`` is configured with it and
has no default; ``model_id`` names the file, its hash and the length.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import structlog
from tokenizers import Encoding, Tokenizer

log = structlog.get_logger(__name__)

TOKENIZER_FILE = "tokenizer.json"
REQUIRED_INPUTS = frozenset({"input_ids", "attention_mask"})
OPTIONAL_INPUTS = frozenset({"token_type_ids"})
BATCH_SIZE = 16  # pairs per run: 30 candidates are two runs
THREADS = 2  # the machines have 2 cores
PAD_TOKENS = ("[PAD]", "<pad>")


class RerankerSetupError(ValueError):
    """The cross-encoder cannot be built; the message is one line naming the file."""


class Reranker(Protocol):
    """Scores question/passage pairs; higher is more relevant, on the model's own scale."""

    @property
    def model_id(self) -> str:
        """Names the weights and whatever changes a score (the maximum length)."""

    @property
    def threshold(self) -> float:
        """Below this best score the answer is ``no_document`` (per model id)."""

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        """One score per text, in the order given."""


@dataclass(frozen=True)
class WithThreshold:
    """``reranker`` measured against another threshold (``eval`` asks with it off)."""

    reranker: Reranker
    threshold: float

    @property
    def model_id(self) -> str:
        return self.reranker.model_id

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        return self.reranker.score(question, texts)


class OnnxCrossEncoder:
    """``Reranker`` over an ONNX cross-encoder file and the ``tokenizer.json`` beside it."""

    def __init__(
        self, path: str | Path, *, sha256: str, threshold: float, max_length: int = 512,
        threads: int = THREADS,
    ) -> None:
        path = Path(path)
        if max_length < 8:
            raise RerankerSetupError(f"reranker max_length must be at least 8, got {max_length}")
        expected = sha256.lower()
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise RerankerSetupError(
                f"cannot read the reranker model {str(path)!r}: {exc.strerror or exc}") from exc
        digest = hashlib.sha256(data).hexdigest()
        if digest != expected:
            raise RerankerSetupError(
                f"reranker model {str(path)!r} has sha256 {digest}, expected {expected}")
        self._tokenizer = _load_tokenizer(path.with_name(TOKENIZER_FILE), max_length)
        self._session = _load_session(data, path, threads)
        self._inputs = {i.name for i in self._session.get_inputs()}
        missing = sorted(REQUIRED_INPUTS - self._inputs)
        unknown = sorted(self._inputs - REQUIRED_INPUTS - OPTIONAL_INPUTS)
        if missing or unknown:
            raise RerankerSetupError(
                f"reranker model {str(path)!r} has inputs {sorted(self._inputs)}: "
                f"expected input_ids, attention_mask and optionally token_type_ids")
        self._threshold = float(threshold)
        self._model_id = f"{path.stem}-{digest[:12]}@{max_length}"
        self.max_length = max_length
        try:  # one run at full length: positions, output shape
            self._run(np.ones((1, max_length), dtype=np.int64),
                      np.ones((1, max_length), dtype=np.int64),
                      np.zeros((1, max_length), dtype=np.int64))
        except Exception as exc:  # onnxruntime raises its own untyped exceptions
            raise RerankerSetupError(
                f"reranker model {str(path)!r} does not run on {max_length} tokens "
                f"(POLICY_INDEXER_RERANKER_MAX_LENGTH): {_first_line(exc)}") from exc
        log.info("reranker loaded", path=str(path), sha256=digest, model_id=self._model_id,
                 threshold=self._threshold, inputs=sorted(self._inputs))

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def threshold(self) -> float:
        return self._threshold

    def score(self, question: str, texts: Sequence[str]) -> list[float]:
        scores: list[float] = []
        for start in range(0, len(texts), BATCH_SIZE):
            pairs = [(question, text) for text in texts[start : start + BATCH_SIZE]]
            encodings: list[Encoding] = self._tokenizer.encode_batch(pairs)
            scores += self._run(
                np.asarray([e.ids for e in encodings], dtype=np.int64),
                np.asarray([e.attention_mask for e in encodings], dtype=np.int64),
                np.asarray([e.type_ids for e in encodings], dtype=np.int64),
            ).tolist()
        return scores

    def _run(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64],
             types: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = types
        logits = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        if logits.ndim == 2:  # (pairs, labels): the first label's logit
            logits = logits[:, 0]
        if logits.shape != (len(ids),):
            raise RerankerSetupError(
                f"reranker output has shape {logits.shape}: expected one logit per pair")
        return logits


def _load_tokenizer(path: Path, max_length: int) -> Tokenizer:
    if not path.is_file():
        raise RerankerSetupError(
            f"no tokenizer beside the reranker model: {str(path)!r} is missing")
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises its own untyped exceptions
        raise RerankerSetupError(f"cannot read the reranker tokenizer {str(path)!r}: "
                                 f"{_first_line(exc)}") from exc
    padding = tokenizer.padding
    pad_token = padding["pad_token"] if padding else next(
        (t for t in PAD_TOKENS if tokenizer.token_to_id(t) is not None), "[PAD]")
    pad_id = tokenizer.token_to_id(pad_token)
    # the file's own truncation and fixed-length padding are replaced by ours
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.enable_padding(pad_id=pad_id or 0, pad_token=pad_token)
    return tokenizer


def _load_session(data: bytes, path: Path, threads: int) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(data, sess_options=options,
                                    providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own untyped exceptions
        raise RerankerSetupError(
            f"onnxruntime cannot load {str(path)!r}: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    """The start-up error stays one line (onnxruntime's messages run over several)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
