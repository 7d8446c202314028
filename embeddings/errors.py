"""Errors of the embeddings package.

::

    EmbeddingError
    ├── EncoderSetupError              the model or tokenizer cannot be loaded, or a setting is bad
    ├── EmbeddingCacheError            the cache cannot be read or written
    │   └── TransientEmbeddingCacheError   unreachable, busy, 429, 5xx: retry later
    └── BackfillStalledError           a backfill round wrote nothing while vectors are missing

Lower-level errors (``sqlite3``, ``elasticsearch``, ``onnxruntime``) are translated
at the boundary with ``raise ... from exc``, so callers catch ours only.
"""

from __future__ import annotations


class EmbeddingError(Exception):
    """Base of every error raised by this package."""


class EncoderSetupError(EmbeddingError):
    """The encoder cannot be built: a missing or unexpected file, or a bad setting."""


class EmbeddingCacheError(EmbeddingError):
    """The embedding cache cannot be read or written."""


class TransientEmbeddingCacheError(EmbeddingCacheError):
    """The cache could not be reached or asked us to slow down; the data is fine."""


class BackfillStalledError(EmbeddingError):
    """Vectors are missing, yet a round stored none of them: the index refuses them."""
