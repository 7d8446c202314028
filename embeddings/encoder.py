"""The encoder interface every dense-retrieval part depends on.

An encoder turns texts into unit-length float32 vectors of a fixed dimension.
``model_id`` names the model *and* everything that changes its vectors (the
weights, the pooling, the maximum length): two encoders with the same id must
give the same vectors, because the id is part of the embedding cache's key and
is recorded on every stored vector (a model change is a re-embedding job,
never a silent mix).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

TextKind = Literal["query", "passage"]
Vectors = npt.NDArray[np.float32]


class Encoder(Protocol):
    @property
    def model_id(self) -> str:
        """Stable id of the model and its settings, e.g. ``all-MiniLM-L6-v2-int8@256``."""

    @property
    def dim(self) -> int:
        """Length of every vector."""

    def encode(self, texts: Sequence[str], *, kind: TextKind = "passage") -> Vectors:
        """Shape ``(len(texts), dim)``, each row L2-normalised (cosine = dot product)."""
