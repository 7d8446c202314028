"""The chunker's guarantees as a checker, for tests and for ``policy-indexer chunk --check``.

``problems(text, chunks, policy)`` returns what is wrong, empty when all is well:

- lossless: chunk spans are in order and do not overlap, only whitespace lies
  between them, and each chunk's text is its span of the source (after the
  repeated table header, if any), so every word of the body is in exactly
  one chunk, in order (for HTML: every word of the text content);
- bounded: no chunk is above ``policy.max_tokens`` unless flagged unsplittable;
- consistent: ids unique and ``<document_id>@v<version>#<section>``, ordinals
  0..n-1, previous/next links, token counts as ``count_tokens`` says
  (``embed_text`` is derived from heading path and text, so it always agrees).
"""

from __future__ import annotations

from collections.abc import Sequence

from chunker.html import html_to_text
from chunker.markdown import parse_markdown
from chunker.model import Chunk, chunk_id
from chunker.policy import SizePolicy
from chunker.tokens import count_tokens


def problems(text: str, chunks: Sequence[Chunk], policy: SizePolicy) -> list[str]:
    found: list[str] = []
    html = bool(chunks) and chunks[0].content_type == "text/html"
    # the front matter is not body: it becomes metadata
    position = parse_markdown(text).body_start if text.startswith("---") and not html else 0

    def unread(gap: str) -> str:
        return (html_to_text(gap) if html else gap).strip()

    ids = [chunk.chunk_id for chunk in chunks]
    if len(set(ids)) != len(ids):
        found.append("chunk ids are not unique")
    for ordinal, chunk in enumerate(chunks):
        where = f"chunk {ordinal} ({chunk.chunk_id})"
        if chunk.char_start < position:
            found.append(f"{where} starts at {chunk.char_start}, before the last end {position}")
        elif unread(text[position : chunk.char_start]):
            gap = unread(text[position : chunk.char_start])[:60]
            found.append(f"{where}: text between chunks is in no chunk: {gap!r}")
        source = text[chunk.char_start : chunk.char_end]
        if html:
            source = html_to_text(source)
        body = chunk.text
        if chunk.repeated_header is not None:
            prefix = chunk.repeated_header + "\n"
            if not body.startswith(prefix):
                found.append(f"{where}: text does not start with its repeated header")
            body = body[len(prefix) :]
        if body != source:
            found.append(f"{where}: text is not its span [{chunk.char_start}, {chunk.char_end})")
        position = max(position, chunk.char_end)
        if chunk.token_count != count_tokens(chunk.text):
            found.append(f"{where}: token_count {chunk.token_count} != {count_tokens(chunk.text)}")
        if chunk.token_count > policy.max_tokens and not chunk.unsplittable:
            found.append(f"{where}: {chunk.token_count} tokens > max {policy.max_tokens}")
        if chunk.ordinal != ordinal:
            found.append(f"{where}: ordinal {chunk.ordinal}")
        if chunk.chunk_id != chunk_id(chunk.document_id, chunk.version, chunk.section):
            found.append(f"{where}: id does not match document, version and section")
        expected_previous = ids[ordinal - 1] if ordinal else None
        expected_next = ids[ordinal + 1] if ordinal + 1 < len(ids) else None
        if (chunk.neighbours.previous, chunk.neighbours.next) != (expected_previous, expected_next):
            found.append(f"{where}: previous/next links are wrong")
    if unread(text[position:]):
        found.append(f"text after the last chunk is in no chunk: {unread(text[position:])[:60]!r}")
    return found
