"""Keyword search over chunks: the hit type and the permission rule every store keeps.

The rule: a chunk is visible to a caller when every access label the chunk
carries is among the caller's labels; a chunk with no labels is visible to
everyone. Stores apply it inside the query (never by filtering results
afterwards), so a page of results is never short or padded with chunks the
caller may not see.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from chunker.model import Chunk

# Words as FTS5's unicode61 tokenizer sees them: letters and digits of any script.
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_TERMS = 64


class SearchQueryError(ValueError):
    """The search text or the limit cannot be used."""


@dataclass(frozen=True)
class SearchHit:
    chunk: Chunk
    score: float  # higher is better (BM25)

    @property
    def chunk_id(self) -> str:
        return self.chunk.chunk_id


def visible_to(chunk_labels: Iterable[str], caller_labels: Iterable[str]) -> bool:
    """The permission rule, for stores that cannot express it in their query language."""
    return set(chunk_labels) <= set(caller_labels)


def fts5_match(text: str) -> str | None:
    """A safe FTS5 MATCH expression for free text: any of its words, each quoted.

    Quoting makes every operator character of the user's text a literal, so no
    input can turn into FTS5 syntax. None when the text has no word at all.
    """
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    if not words:
        return None
    if len(words) > MAX_QUERY_TERMS:
        raise SearchQueryError(
            f"query={text[:80]!r}... has {len(words)} words; at most {MAX_QUERY_TERMS}"
        )
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
