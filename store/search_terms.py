"""What each leg of the search reads from a chunk, written once for every store.

The keyword leg indexes the analysed terms of the title, the heading path, the
text and the document's ``keywords`` (the words customers use, which the formal
text never does), in the chunk's language; the dense leg embeds
``text_to_embed``. Both are functions of the chunk alone, so every store
(and a re-index) computes the same.
"""

from __future__ import annotations

from analysis.terms import analyse
from chunker.model import Chunk


def chunk_terms(chunk: Chunk) -> str:
    """The chunk's analysed terms, space-separated (FTS5 ``unicode61`` / ES ``whitespace``)."""
    meta = chunk.metadata
    parts = [meta.title or "", *chunk.heading_path, chunk.text, " ".join(meta.keywords)]
    return " ".join(analyse("\n".join(parts), meta.language))


def text_to_embed(chunk: Chunk) -> str:
    """Heading path (its first element is the title) and text: ``Chunk.embed_text``."""
    title = chunk.metadata.title
    if title and (not chunk.heading_path or chunk.heading_path[0] != title):
        return f"{title}\n{chunk.embed_text}"
    return chunk.embed_text
