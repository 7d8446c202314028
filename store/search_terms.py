"""What each leg of the search reads from a chunk, written once for every store.

The keyword leg indexes the analysed terms of the title, the heading path, the
text and the document's ``keywords`` (the words customers use, which the formal
text never does), in the chunk's language; the dense leg embeds
``text_to_embed``. Both are functions of the chunk alone, so every store
(and a re-index) computes the same.

The terms are content-addressed, as the vectors are: remembered by a hash of
the analysed text and its language (``TERMS_CACHE_ENTRIES`` chunks, at most
``TERMS_CACHE_CHARS`` characters of terms), so a chunk that a new version
carries unchanged, or a version indexed again, is not analysed again.
"""

from __future__ import annotations

from analysis.cache import CacheInfo, ContentCache, content_key
from analysis.terms import analyse
from chunker.model import Chunk

TERMS_CACHE_ENTRIES = 8192
# Characters of terms held: 32 MB of ASCII, 64 MB of Greek or Cyrillic (two bytes a
# character in a str); a full cache of 8,192 chunks of 800 tokens is about this.
TERMS_CACHE_CHARS = 32_000_000
_TERMS: ContentCache[str] = ContentCache(TERMS_CACHE_ENTRIES, TERMS_CACHE_CHARS, len)


def chunk_terms(chunk: Chunk) -> str:
    """The chunk's analysed terms, space-separated (FTS5 ``unicode61`` / ES ``whitespace``)."""
    meta = chunk.metadata
    parts = [meta.title or "", *chunk.heading_path, chunk.text, " ".join(meta.keywords)]
    text = "\n".join(parts)
    key = content_key(meta.language or "", text)
    terms = _TERMS.get(key)
    if terms is None:
        terms = " ".join(analyse(text, meta.language))
        _TERMS.put(key, terms)
    return terms


def terms_cache_info() -> CacheInfo:
    """Hits, misses, chunks and characters held by ``chunk_terms``' cache."""
    return _TERMS.info()


def terms_cache_clear() -> None:
    _TERMS.clear()


def text_to_embed(chunk: Chunk) -> str:
    """Heading path (its first element is the title) and text: ``Chunk.embed_text``."""
    title = chunk.metadata.title
    if title and (not chunk.heading_path or chunk.heading_path[0] != title):
        return f"{title}\n{chunk.embed_text}"
    return chunk.embed_text
