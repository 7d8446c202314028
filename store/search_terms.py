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

import re

from analysis.cache import CacheInfo, ContentCache, content_key
from analysis.terms import analyse
from chunker.model import Chunk
from chunker.sections import path_title

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


_WORD = re.compile(r"\S+")


def embed_head(text: str) -> int:
    """Where the heading part of a ``text_to_embed`` ends (an index into ``text``).

    ``text_to_embed`` is the heading path line, a newline and the text; or, when the
    title is not the path's first element as written, the title line in front of it.
    The path's first element is always ``path_title(title)``, which tells the two apart.
    """
    first, sep, rest = text.partition("\n")
    if not sep:
        return len(text)
    second, sep2, _ = rest.partition("\n")
    root = path_title(first)
    if sep2 and root != first and (second == root or second.startswith(root + " > ")):
        return len(first) + 1 + len(second) + 1
    return len(first) + 1


def embed_windows(text: str, words: int, stride: int) -> list[str]:
    """``text`` (a ``text_to_embed``) as overlapping windows of ``words`` words of its
    body, a new one every ``stride`` words, each with the heading part in front.

    A body of at most ``words`` words is one window: the text itself, unchanged, so its
    vector is the whole-chunk vector (one cache entry serves both). Windows are slices
    of the original text (its line breaks kept), from a word's start to a word's end.
    """
    head_end = embed_head(text)
    head, body = text[:head_end], text[head_end:]
    spans = [m.span() for m in _WORD.finditer(body)]
    if len(spans) <= words:
        return [text]
    out = []
    start = 0
    while True:
        end = min(start + words, len(spans))
        out.append(head + body[spans[start][0]:spans[end - 1][1]])
        if end == len(spans):
            return out
        start += stride


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
