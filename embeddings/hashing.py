"""A small deterministic encoder of our own: hashed character n-grams and words.

It is a real encoder, weak but honest: texts that share words and word pieces
get a higher cosine. It needs no model file, so unit tests, benchmarks that
count encodings, and machines without the MiniLM package use it. It is not a
mock: the same text gives the same vector on every machine and Python
(hashes are BLAKE2b and fixed integer mixing, never Python's salted ``hash``).

Features, each added with a sign taken from its hash (the signed hashing trick,
so collisions cancel on average instead of piling up):

- every character n-gram (3 to 5 by default) of the lower-cased text with its
  whitespace runs folded to one space (so it sees across word boundaries);
- every word (``\\w+``), at twice the weight of one n-gram.

The row is then L2-normalised. A text with no feature (empty, or shorter than
the smallest n-gram with no word) gets the vector of one fixed feature, so every
row has unit length as the ``Encoder`` protocol requires.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from embeddings.encoder import TextKind, Vectors
from embeddings.errors import EncoderSetupError

_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")
# splitmix64's constants: a cheap mix with good avalanche, in fixed uint64 arithmetic.
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = 0x9E3779B97F4A7C15
_EMPTY_FEATURE = "\x00empty"
WORD_WEIGHT = 2.0


def _mix(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    h = h ^ (h >> np.uint64(30))
    h = h * _M1
    h = h ^ (h >> np.uint64(27))
    h = h * _M2
    return h ^ (h >> np.uint64(31))


def _word_hash(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")


class HashingEncoder:
    """``Encoder`` of hashed character n-grams and word unigrams; ``kind`` is ignored."""

    def __init__(self, dim: int = 384, *, ngram_range: tuple[int, int] = (3, 5)) -> None:
        if not isinstance(dim, int) or dim < 8:
            raise EncoderSetupError(f"dim must be an integer >= 8, got {dim!r}")
        low, high = ngram_range
        if not 1 <= low <= high <= 16:
            raise EncoderSetupError(
                f"ngram_range must satisfy 1 <= low <= high <= 16, got {ngram_range!r}"
            )
        self._dim = dim
        self._ngrams = tuple(range(low, high + 1))
        suffix = "" if ngram_range == (3, 5) else f"-ng{low}{high}"
        self._model_id = f"hashing-v1@{dim}{suffix}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: Sequence[str], *, kind: TextKind = "passage") -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._one(text)
        return out

    def _one(self, text: str) -> npt.NDArray[np.float32]:
        folded = _SPACE.sub(" ", text.lower()).strip()
        hashes: list[npt.NDArray[np.uint64]] = []
        weights: list[npt.NDArray[np.float64]] = []
        codes = np.frombuffer(folded.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
        for n in self._ngrams:
            if len(codes) < n:
                continue
            # polynomial hash of each window, then mixed; n is folded in so a 3-gram
            # and a 4-gram never share a hash by construction
            seed = np.uint64((n * _GOLDEN) % 2**64)
            h = np.full(len(codes) - n + 1, seed, dtype=np.uint64)
            for j in range(n):
                h = _mix(h ^ codes[j : len(codes) - n + 1 + j])
            hashes.append(h)
            weights.append(np.ones(len(h)))
        words = _WORD.findall(folded)
        if words:
            hashes.append(np.array([_word_hash(w) for w in words], dtype=np.uint64))
            weights.append(np.full(len(words), WORD_WEIGHT))
        if not hashes:
            hashes.append(np.array([_word_hash(_EMPTY_FEATURE)], dtype=np.uint64))
            weights.append(np.ones(1))
        h = np.concatenate(hashes)
        signs = np.where((h >> np.uint64(63)) & np.uint64(1), -1.0, 1.0)
        buckets = (h % np.uint64(self._dim)).astype(np.intp)
        vector: npt.NDArray[np.float64] = np.bincount(
            buckets, weights=signs * np.concatenate(weights), minlength=self._dim
        ).astype(np.float64)
        norm = float(np.linalg.norm(vector))
        if norm == 0.0:  # every feature cancelled out (rare): fall back to the fixed one
            vector = np.zeros(self._dim)
            vector[_word_hash(_EMPTY_FEATURE) % self._dim] = 1.0
            norm = 1.0
        return (vector / norm).astype(np.float32)
