"""The vector backfill's defaults, here once: ``embeddings.backfill`` and the embeddings
settings take them. No imports, so the settings read them at start for free."""

from __future__ import annotations

# Chunks encoded a round.
BATCH_SIZE = 32
