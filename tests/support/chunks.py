"""Build chunks by hand for store and deleter tests (no chunker needed)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from chunker.model import Chunk, DocumentMetadata, chunk_id


def make_chunk(document_id: str, version: int, section: str = "intro", **extra: Any) -> Chunk:
    metadata = extra.pop("metadata", {})
    return Chunk(
        chunk_id=chunk_id(document_id, version, section),
        document_id=document_id,
        version=version,
        section=section,
        ordinal=extra.pop("ordinal", 0),
        heading_path=extra.pop("heading_path", ["Title", section]),
        text=extra.pop("text", f"text of {section} v{version}"),
        char_start=0,
        char_end=10,
        token_count=3,
        metadata=DocumentMetadata(**metadata),
        changed_at=datetime(2024, 1, 1, tzinfo=UTC),
        **extra,
    )


def fake_chunker(
    document_id: str,
    version: int,
    content: str,
    *,
    content_type: str = "text/markdown",
    metadata: Mapping[str, object] | None = None,
    changed_at: Any = None,
) -> list[Chunk]:
    """One chunk per non-empty paragraph whose first word is its section name.

    A paragraph 'BOOM' raises ``ChunkerError`` (a poison input).
    """
    from chunker.errors import ChunkerError

    chunks = []
    for ordinal, para in enumerate(p for p in content.split("\n\n") if p.strip()):
        if para.strip() == "BOOM":
            raise ChunkerError(f"cannot chunk {document_id!r}: BOOM")
        section = para.split()[0].lower()
        meta = dict(metadata or {})
        meta.pop("source_path", None)
        chunks.append(
            make_chunk(document_id, version, section, ordinal=ordinal, text=para, metadata=meta)
        )
    return chunks
