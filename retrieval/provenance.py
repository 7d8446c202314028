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


def link_of(chunk: Chunk) -> str:
    """Source path (or URL) and the section anchor."""
    base = chunk.metadata.source_path or chunk.document_id
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
