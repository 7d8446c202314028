"""One ONNX sentence encoder (BERT-style, CPU, offline) for every model a spec describes.

``OnnxSentenceEncoder(spec, ...)`` is an ``Encoder``: the tokenizer (``tokenizers``,
WordPiece) cuts each text at ``max_length`` tokens, onnxruntime runs the graph, the
last hidden state is pooled (``"mean"`` over the attention mask, or ``"cls"``: the
first token) and L2-normalised. A ``spec`` (``OnnxModelSpec``) names everything that
differs between models: the files and their sha256s, the pooling, the default and
highest ``max_length``, the prefixes of queries and passages, the dimension, and whether
a text's vector is independent of its batch.

Both files are read and their sha256 checked before anything runs, so a ``model_id``
always names the same weights; a missing or different file is an ``EncoderSetupError``
of one line that names the file and the command that installs it. Nothing is
downloaded at run time.

Batching: the texts of a call are sorted by length and run in batches padded to their
longest member; the attention mask keeps padding out. That makes a vector independent
of its batch only for graphs with static int8 weights and fp32 arithmetic (MiniLM's).
Graphs quantised dynamically (``DynamicQuantizeLinear`` + ``MatMulInteger``, as the
Xenova exports of bge-small-en-v1.5 and e5-small-v2 are) pick one activation scale per
tensor, over the whole batch, padding included: a text's vector would then change with
its neighbours, and the embedding cache stores it once. Such specs say
``batchable=False`` and run every text alone (``batch_size`` 1, no padding).

onnxruntime's threads are bounded (``threads``) and do not spin while they wait
(``spinning=False``); ``optimized_model_dir`` keeps the optimised graph on disk, so a
new process skips the graph optimisation (same vectors either way).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
from tokenizers import Tokenizer

from embeddings.encoder import TextKind, Vectors
from embeddings.errors import EncoderSetupError

Pooling = Literal["mean", "cls"]
HIDDEN_OUTPUT = "last_hidden_state"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OnnxModelSpec:
    """What one model needs; ``name`` + ``@max_length`` is the ``model_id``."""

    name: str                  # e.g. "bge-small-en-v1.5-int8": the model_id before "@"
    label: str                 # short, for messages and logs: "MiniLM", "bge-small"
    model_file: str            # file name in the models directory
    model_sha256: str
    tokenizer_file: str        # file name in the models directory
    tokenizer_sha256: str
    pooling: Pooling
    dim: int
    max_length: int            # the default (what the model was trained at)
    max_positions: int = 512   # the graph's position limit: max_length may not exceed it
    query_prefix: str = ""
    passage_prefix: str = ""
    batchable: bool = True     # False: a vector depends on its batch, every text runs alone
    install_hint: str = "scripts/install --models"

    def model_id(self, max_length: int) -> str:
        return f"{self.name}@{max_length}"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_checked(path: Path, expected_sha256: str, what: str, hint: str) -> bytes:
    """The bytes of ``path``, or a one-line ``EncoderSetupError``: missing, unreadable, or
    not the pinned file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise EncoderSetupError(f"{what} {str(path)!r} is missing; run {hint}") from exc
    except OSError as exc:
        raise EncoderSetupError(f"cannot read {what} {str(path)!r}: {exc}; run {hint}") from exc
    return pinned(data, expected_sha256, f"{what} {str(path)!r}", f"; run {hint}")


def pinned(data: bytes, expected_sha256: str, what: str, hint: str = "") -> bytes:
    """``data``, or a one-line ``EncoderSetupError`` if it is not the pinned file."""
    digest = sha256_hex(data)
    if digest != expected_sha256:
        raise EncoderSetupError(f"{what} has sha256 {digest}, expected {expected_sha256}{hint}")
    return data


def tokenizer_from_bytes(raw: bytes, max_length: int) -> Tokenizer:
    tokenizer = Tokenizer.from_str(raw.decode("utf-8"))
    # a file may ship with its own truncation and fixed padding: ours replace them
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def session_options(threads: int, spinning: bool,
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


def new_session(model: bytes | str, options: ort.SessionOptions) -> ort.InferenceSession:
    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def optimized_graph_name(model_name: str, model_sha256: str) -> str:
    """The cache file of an optimised graph: the model's bytes and onnxruntime's version
    decide what the optimiser writes, so both are in the name."""
    return f"{model_name}-{model_sha256[:32]}-ort{ort.__version__}.onnx"


def _cached_session(spec: OnnxModelSpec, data: bytes, cache_dir: Path,
                    options: ort.SessionOptions) -> ort.InferenceSession | None:
    """A session on the optimised graph in ``cache_dir``, written there first if absent.

    The graph is saved at ORT_ENABLE_EXTENDED (ORT_ENABLE_ALL may add layouts for this
    CPU only) to a file of its own and renamed, so a reader never sees half a file. None,
    logged, when the cache cannot be used: the caller then optimises in memory as if there
    were no cache.
    """
    path = cache_dir / optimized_graph_name(spec.name, spec.model_sha256)
    if not path.exists():
        aside = cache_dir / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            writer = session_options(1, False, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
            writer.optimized_model_filepath = str(aside)
            new_session(data, writer)
            os.replace(aside, path)
        except Exception as exc:  # OSError, or onnxruntime's own untyped errors
            log.warning("cannot write the optimised %s graph to %s: %s", spec.label, path, exc)
            with contextlib.suppress(OSError):
                aside.unlink(missing_ok=True)
            return None
    try:
        return new_session(str(path), options)
    except Exception as exc:  # a damaged file: it is written again next time
        log.warning("cannot load the optimised %s graph %s (removed): %s", spec.label, path, exc)
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return None


def load_session(spec: OnnxModelSpec, path: Path, threads: int, spinning: bool,
                 cache_dir: Path | None) -> ort.InferenceSession:
    data = read_checked(path, spec.model_sha256, f"the {spec.label} model", spec.install_hint)
    options = session_options(threads, spinning, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    if cache_dir is not None:
        session = _cached_session(spec, data, cache_dir, options)
        if session is not None:
            return session
    try:
        return new_session(data, options)
    except Exception as exc:  # onnxruntime raises its own untyped exceptions
        raise EncoderSetupError(f"onnxruntime cannot load {str(path)!r}: {exc}") from exc


class OnnxSentenceEncoder:
    """``Encoder`` over one ``OnnxModelSpec``; ``model_id`` carries ``max_length``.

    The files are ``models_dir / spec.model_file`` and ``models_dir / spec.tokenizer_file``
    unless ``model_path`` / ``tokenizer_path`` name them; ``models_dir`` is required then
    only for the file not named. Subclasses may find the default files elsewhere
    (``_default_model_path``, ``_default_tokenizer``).
    """

    def __init__(
        self,
        spec: OnnxModelSpec,
        *,
        models_dir: str | Path | None = None,
        max_length: int | None = None,
        batch_size: int | None = None,
        threads: int = 2,
        spinning: bool = False,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        optimized_model_dir: str | Path | None = None,
    ) -> None:
        max_length = spec.max_length if max_length is None else max_length
        if not isinstance(max_length, int) or not 8 <= max_length <= spec.max_positions:
            raise EncoderSetupError(
                f"max_length must be an integer in [8, {spec.max_positions}], got {max_length!r}"
            )
        batch_size = (8 if spec.batchable else 1) if batch_size is None else batch_size
        if not isinstance(batch_size, int) or batch_size < 1:
            raise EncoderSetupError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if batch_size > 1 and not spec.batchable:
            raise EncoderSetupError(
                f"batch_size must be 1 for {spec.name} (int8 activations scaled per batch: "
                f"a vector would depend on its batch), got {batch_size!r}"
            )
        if not isinstance(threads, int) or threads < 1:
            raise EncoderSetupError(f"threads must be an integer >= 1, got {threads!r}")
        self.spec = spec
        self.max_length = max_length
        self.batch_size = batch_size
        self._model_id = spec.model_id(max_length)
        self._models_dir = Path(models_dir) if models_dir is not None else None
        if tokenizer_path is not None:
            raw = read_checked(Path(tokenizer_path), spec.tokenizer_sha256,
                               f"the {spec.label} tokenizer", spec.install_hint)
        else:
            raw = self._default_tokenizer()
        self._tokenizer = tokenizer_from_bytes(raw, max_length)
        path = Path(model_path) if model_path is not None else self._default_model_path()
        cache_dir = Path(optimized_model_dir) if optimized_model_dir is not None else None
        self._session = load_session(spec, path, threads, spinning, cache_dir)
        self._inputs = {i.name for i in self._session.get_inputs()}
        outputs = [o.name for o in self._session.get_outputs()]
        if HIDDEN_OUTPUT not in outputs:
            raise EncoderSetupError(
                f"the {spec.label} model has no {HIDDEN_OUTPUT!r} output (it has {outputs})")
        self._output = HIDDEN_OUTPUT

    def _in_models_dir(self, name: str) -> Path:
        if self._models_dir is None:
            raise EncoderSetupError(f"no models_dir to find {name!r} in")
        return self._models_dir / name

    def _default_model_path(self) -> Path:
        return self._in_models_dir(self.spec.model_file)

    def _default_tokenizer(self) -> bytes:
        return read_checked(self._in_models_dir(self.spec.tokenizer_file),
                            self.spec.tokenizer_sha256, f"the {self.spec.label} tokenizer",
                            self.spec.install_hint)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self.spec.dim

    def prefix(self, kind: TextKind) -> str:
        return self.spec.query_prefix if kind == "query" else self.spec.passage_prefix

    def encode(self, texts: Sequence[str], *, kind: TextKind = "passage") -> Vectors:
        out = np.empty((len(texts), self.spec.dim), dtype=np.float32)
        if not texts:
            return out
        prefix = self.prefix(kind)
        batch = [prefix + t for t in texts] if prefix else list(texts)
        encodings = self._tokenizer.encode_batch(batch)
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
            self._session.run([self._output], feeds)[0], dtype=np.float32
        )
        if self.spec.pooling == "cls":
            pooled: npt.NDArray[np.float32] = hidden[:, 0, :]
        else:
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms: npt.NDArray[np.float32] = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit
