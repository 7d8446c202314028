"""A chunk as a passage: everything a reply needs to cite it and a machine to check it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from chunker.model import Chunk
from retrieval.models import Freshness, Passage

# A heading's own numbering: "4.2 Refunds", "4.2. Refunds", "B. Exceptions", "IV. Terms",
# "Section 7: ...", "§ 3 ...".
_NUMBERING = re.compile(
    r"^\s*(?:(?:section|article|clause|art\.?|§)\s*)?"
    r"((?:\d+\.)*\d+[a-z]?|[A-Z]|[IVXLC]+)(?:[.):]|\s+[-\u2013\u2014]|\s)",
    re.IGNORECASE,
)


def clause_of(chunk: Chunk) -> str:
    """The section's own numbering where its heading has one ('4.2', 'B.'), else its slug."""
    heading = chunk.heading_path[-1] if len(chunk.heading_path) > 1 else ""
    match = _NUMBERING.match(heading)
    if match:
        number = match.group(1)
        rest = heading[match.end(1):]
        if number.isalpha() and len(number) == 1 and not rest.startswith("."):
            return chunk.section  # "A rider..." is a word, not a numbering
        if number.isalpha() and not number.isupper():
            return chunk.section
        return number + "." if number.isalpha() else number
    return chunk.section


# A URL scheme as the URL standard reads one: a letter, then letters, digits, + - .
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_WEB = re.compile(r"^https?://[^/\\?#\s@]", re.IGNORECASE)
KEPT_SCHEMES = ("http", "https")


def safe_link(base: str) -> str | None:
    """``base`` if a reader's browser would open it as a web page or a relative path, else
    None: the link comes from whoever wrote the document (a signed webhook's
    ``document.path``), and an agent's UI may render it as an anchor.

    - absolute: only ``http://host...`` and ``https://host...`` (any case);
      ``javascript:``, ``data:``, ``vbscript:``, ``file:``... are dropped;
    - relative: kept, unless it starts with ``//`` or a backslash variant
      (``/\\``, ``\\\\``): protocol-relative, another host's page, dropped;
    - any ASCII control character (tab and newline included: browsers delete them,
      so ``java\tscript:`` is ``javascript:``), or leading whitespace: dropped.
    """
    if not base or base[0].isspace() or any(ord(c) < 32 or ord(c) == 127 for c in base):
        return None
    scheme = _SCHEME.match(base)
    if scheme is not None:
        if scheme.group(1).lower() in KEPT_SCHEMES and _WEB.match(base):
            return base
        return None
    if base[:2].replace("\\", "/") == "//":
        return None
    return base


def link_of(chunk: Chunk) -> str | None:
    """Source path (or URL) and the section anchor; None when the source's link is unsafe
    (``safe_link``: the passage then has no link, and the search metrics count it)."""
    base = safe_link(chunk.metadata.source_path or chunk.document_id)
    if base is None:
        return None
    return f"{base}#{chunk.section}"


def passage(
    chunk: Chunk,
    score: float,
    *,
    via: Literal["ranked", "neighbour_of"] = "ranked",
    neighbour_of: str | None = None,
    freshness: Callable[[str], Freshness | None] | None = None,
) -> Passage:
    meta = chunk.metadata
    return Passage(
        document_id=chunk.document_id,
        title=meta.title,
        version=chunk.version,
        clause=clause_of(chunk),
        chunk_id=chunk.chunk_id,
        heading_path=list(chunk.heading_path),
        scope=list(meta.scope),
        access_labels=list(meta.access_labels),
        valid_from=meta.valid_from,
        valid_to=meta.valid_to,
        effective_date=meta.effective_date,
        changed_at=chunk.changed_at,
        link=link_of(chunk),
        language=meta.language,
        score=round(score, 6),
        text=chunk.text,
        via=via,
        neighbour_of=neighbour_of,
        attributes=dict(meta.attributes),
        freshness=freshness(chunk.document_id) if freshness is not None else None,
    )
