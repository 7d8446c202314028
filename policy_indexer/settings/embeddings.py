"""The vector backfill: how many chunks a round, on how many threads, how often."""

from __future__ import annotations

from pydantic import BaseModel, Field

from embeddings.limits import BATCH_SIZE


class EmbeddingsSettings(BaseModel):
    """The embeddings section of ``Settings``."""

    embed_batch_size: int = Field(BATCH_SIZE, ge=1, le=1024, description="Chunks encoded a round.")
    embed_threads: int = Field(
        1, ge=1, le=64,
        description="CPU threads of the encoder (1 keeps the indexing worker a core of its own).",
    )
    embed_idle_seconds: float = Field(
        1.0, gt=0, description="The vector backfill looks for chunks without vectors this often."
    )
