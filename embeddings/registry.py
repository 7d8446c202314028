"""The dense encoders by name: what a setting names, built in one place.

``encoder_by_name("minilm" | "bge-small" | "e5-small" | "hashing", threads=, models_dir=)``.
Each name is a different ``model_id``, so vectors of two names never mix; search may
run several side by side and fuse their rankings.
"""

from __future__ import annotations

from pathlib import Path

from embeddings.encoder import Encoder
from embeddings.errors import EncoderSetupError

ENCODER_NAMES = ("minilm", "bge-small", "e5-small", "hashing")


def encoder_by_name(name: str, *, threads: int = 2,
                    models_dir: str | Path | None = None) -> Encoder:
    """The encoder ``name`` at its default settings (model_id in the comments).

    - ``minilm``: ``MiniLMEncoder`` (``all-MiniLM-L6-v2-int8@256``), from its PyPI package;
    - ``bge-small``: ``BgeSmallEncoder`` (``bge-small-en-v1.5-int8@512``) and
    - ``e5-small``: ``E5SmallEncoder`` (``e5-small-v2-int8@512``), from ``models_dir``
      (``embeddings.packaged.default_models_dir()`` when None);
    - ``hashing``: ``HashingEncoder`` (``hashing-v1@384``), no model, ``threads`` unused.

    ``EncoderSetupError`` for an unknown name or a missing or wrong model file.
    """
    if name == "minilm":
        from embeddings.minilm import MiniLMEncoder  # noqa: PLC0415

        return MiniLMEncoder(threads=threads)
    if name == "bge-small":
        from embeddings.packaged import BgeSmallEncoder  # noqa: PLC0415

        return BgeSmallEncoder(models_dir=models_dir, threads=threads)
    if name == "e5-small":
        from embeddings.packaged import E5SmallEncoder  # noqa: PLC0415

        return E5SmallEncoder(models_dir=models_dir, threads=threads)
    if name == "hashing":
        from embeddings.hashing import HashingEncoder  # noqa: PLC0415

        return HashingEncoder()
    raise EncoderSetupError(f"unknown encoder {name!r}; known: {', '.join(ENCODER_NAMES)}")
