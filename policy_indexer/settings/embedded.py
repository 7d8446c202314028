"""The embedded mode: where its SQLite files live and the local queue's lease."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from transport.local_clients import LEASE_TTL_SECONDS


class EmbeddedSettings(BaseModel):
    """The embedded section of ``Settings``."""

    embedded_dir: Path = Field(
        Path(".policy-indexer"),
        description="Where the embedded mode keeps its SQLite files: index.sqlite3 (chunks, "
        "states, FTS5 search) and queue.sqlite3 (the durable change queue, dead letters).",
    )
    embedded_lease_seconds: float = Field(
        LEASE_TTL_SECONDS, gt=0,
        description="A silent consumer of the local queue loses it after this long."
    )
