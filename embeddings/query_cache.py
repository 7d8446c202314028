"""The vectors of recent questions, kept so that a repeated question is not encoded again.

Agents ask the same question more than once (a retry, the ``no_access`` check,
the same ticket read by two agents), and encoding it is the largest share of a
search after the keyword leg (10-80 ms on two busy cores). A question's vector
depends on the model and the text alone, so a small LRU per encoder is always
right; it is bounded (``size`` questions, ~1.5 kB each for a 384-dimension
model) and lives in the process, never on disk: questions are user text.

The passage cache (``embeddings.cache``) is a different thing: content-addressed,
persistent, and for passages only.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

from embeddings.encoder import Encoder

DEFAULT_SIZE = 256

Vector = npt.NDArray[np.float32]


class QueryVectors:
    """``vector(question)``: the encoder's query vector, from the LRU when it was asked lately.

    Thread-safe (``functools.lru_cache``). The arrays returned are read-only,
    since the same array answers every repeat of its question.
    """

    def __init__(self, encoder: Encoder, size: int = DEFAULT_SIZE) -> None:
        if not isinstance(size, int) or size < 0:
            raise ValueError(f"size={size!r}: the query cache size must be an integer >= 0")
        self.encoder = encoder
        self._cached = functools.lru_cache(maxsize=size)(self._encode)

    def vector(self, question: str) -> Vector:
        return self._cached(question)

    @property
    def hits(self) -> int:
        return self._cached.cache_info().hits

    @property
    def misses(self) -> int:
        return self._cached.cache_info().misses

    def _encode(self, question: str) -> Vector:
        vector: Vector = np.array(self.encoder.encode([question], kind="query")[0],
                                  dtype=np.float32)
        vector.setflags(write=False)
        return vector
