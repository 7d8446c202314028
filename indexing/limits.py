"""What every store can hold, checked on the chunks before the first write.

The change event is checked at the edge (``events.model``: version, id, content,
the labels it carries), but the chunks also take values from the document's own
front matter (access labels, keywords, scope, title) and grow ids from its
headings. A value no store can hold would otherwise surface as an exception in
the middle of a write (SQLite ``OverflowError``, an Elasticsearch refusal of an
``_id`` over 512 bytes), or worse, be stored by one store and refused by
another. Checking here makes such a document poison, the same on every store,
with the document id and the field in the reason, before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from chunker.model import Chunk
from events.model import MAX_LABELS, MAX_TEXT_CHARS, MAX_VERSION, check_label, utf8_size
from indexing.errors import PoisonEvent

# Elasticsearch's limit on ``_id``; a chunk id is the ``_id`` of its chunk.
MAX_ID_BYTES = 512


def check_chunks(document_id: str, chunks: Sequence[Chunk]) -> None:
    """Raise ``PoisonEvent("limits", ...)`` naming the document, chunk and field at fault."""
    checked_meta: set[int] = set()
    for chunk in chunks:
        where = f"document {document_id!r}, chunk {chunk.chunk_id[:80]!r}"
        try:
            size = utf8_size(chunk.chunk_id)
            if size > MAX_ID_BYTES:
                raise ValueError(f"chunk_id is {size} bytes in UTF-8; at most {MAX_ID_BYTES}")
            if not 1 <= chunk.version <= MAX_VERSION:
                raise ValueError(f"version={chunk.version} is not in 1..{MAX_VERSION}")
            if id(chunk.metadata) not in checked_meta:  # chunks of a document share it
                _check_metadata(chunk)
                checked_meta.add(id(chunk.metadata))
        except ValueError as exc:
            raise PoisonEvent("limits", f"{where}: {exc}") from exc


def _check_metadata(chunk: Chunk) -> None:
    meta = chunk.metadata
    for field, values in (("access_labels", meta.access_labels), ("scope", meta.scope),
                          ("keywords", meta.keywords)):
        if len(values) > MAX_LABELS:
            raise ValueError(f"{field} has {len(values)} values; at most {MAX_LABELS}")
        for value in values:
            if not isinstance(value, str):
                raise ValueError(f"{field} value {value!r} is not a string")
            try:
                check_label(value)
            except ValueError as exc:
                raise ValueError(f"{field} value {value[:40]!r} {exc}") from exc
    for field, text in (("title", meta.title), ("source_path", meta.source_path)):
        if text is not None and (len(text) > MAX_TEXT_CHARS or "\x00" in text):
            raise ValueError(f"{field} is longer than {MAX_TEXT_CHARS} characters or has a NUL")
