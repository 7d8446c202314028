"""Markdown to blocks, with markdown-it-py (CommonMark + GFM tables + front matter).

Only the block level is parsed for the whole document (inline parsing is
the slow half of markdown-it and the chunker needs it for headings only).
Top-level tokens carry line maps; they are turned into character spans of
the *original* text, so ``\\r\\n`` line ends and everything else survive.
``maxNesting`` bounds the parser's recursion on deeply nested lists and
quotes: blocks nested deeper are kept whole inside their top-level block.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from chunker.blocks import Block, ParsedDocument

_NEWLINE = re.compile(r"\r\n|\r|\n")
# bounded repetitions: no input makes the search quadratic
_ANCHOR_DEF_PARTS = tuple(
    re.compile(part, re.IGNORECASE)
    for part in (
        r"""<a\s[^<>]{0,200}?\b(?:id|name)[ \t]{0,8}=[ \t]{0,8}["']([^"'<>\s]{1,200})["']""",
        r"""\{:?[ \t]{0,8}#([\w\-:.]{1,200})[ \t]{0,8}\}""",
    )
)
_ANCHOR_DEF = re.compile("|".join(part.pattern for part in _ANCHOR_DEF_PARTS), re.IGNORECASE)
_INLINE_MARKUP = re.compile(r"[\\`*_\[\]<>!&]")
_KINDS = {
    "paragraph_open": "paragraph",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "table_open": "table",
    "blockquote_open": "quote",
    "fence": "fence",
    "code_block": "code",
    "html_block": "html",
    "hr": "rule",
    "heading_open": "heading",
}
MAX_NESTING = 20


@lru_cache(maxsize=2)
def block_parser(front_matter: bool = True) -> MarkdownIt:
    """The block-level parser (built once; markdown-it keeps no state between parses).

    Without ``front_matter``, for a span of a document: a span that starts
    with ``---`` is not the document's start.
    """
    md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable("table")
    if front_matter:
        md.use(front_matter_plugin)
    md.disable(["inline", "text_join"])
    return md


@lru_cache(maxsize=1)
def _inline_parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"maxNesting": MAX_NESTING})


def split_lines(text: str) -> tuple[list[str], list[int]]:
    """The lines of ``text`` without their ends (``\n``, ``\r\n`` or ``\r``), and the
    offset where each starts, plus ``len(text)`` as a sentinel."""
    if "\r" in text:
        lines = _NEWLINE.split(text)
        starts = [0, *(m.end() for m in _NEWLINE.finditer(text)), len(text)]
    else:  # the common case, at C speed
        lines = text.split("\n")
        after_end = map((1).__add__, map(len, lines[:-1]))  # each line and its "\n"
        starts = [*itertools.accumulate(after_end, initial=0), len(text)]
    return lines, starts


def line_starts(text: str) -> list[int]:
    """Offset of the start of every line, plus ``len(text)`` as a sentinel."""
    return split_lines(text)[1]


def heading_title(inline_source: str) -> tuple[str, tuple[str, ...]]:
    """Plain text of a heading's inline Markdown, and the anchor ids it defines."""
    has_ids = "<" in inline_source or "{" in inline_source
    anchors = tuple(a or b for a, b in _ANCHOR_DEF.findall(inline_source)) if has_ids else ()
    if _INLINE_MARKUP.search(inline_source):
        parts: list[str] = []
        for token in _inline_parser().parseInline(inline_source):
            for child in token.children or ():
                if child.type in {"text", "code_inline"}:
                    parts.append(child.content)
                elif child.type in {"softbreak", "hardbreak"}:
                    parts.append(" ")
        title = " ".join("".join(parts).split())
    else:  # plain words (braces are plain text to markdown-it): no need to parse
        title = " ".join(inline_source.split())
    # kramdown's "{#id}" attribute is not text
    title = _ANCHOR_DEF.sub("", title).strip() if "{" in title else title
    return title, anchors


def anchor_definitions(text: str, start: int) -> list[tuple[int, int, str]]:
    """Explicit anchor ids (``<a id=..>``, ``<a name=..>``, kramdown's ``{#id}``) from
    ``start`` on, each as (start, end, id), in order.

    Each alternative of ``_ANCHOR_DEF`` is searched alone: one that starts with a
    literal is found at memchr speed, the alternation is tried at every offset.
    """
    found = sorted(
        (match.start(), match.end(), match[1])
        for pattern in _ANCHOR_DEF_PARTS
        for match in pattern.finditer(text, start)
    )
    # as one search would: a match inside another one's span is no match
    kept: list[tuple[int, int, str]] = []
    for match in found:
        if not kept or match[0] >= kept[-1][1]:
            kept.append(match)
    return kept


def parse_markdown(text: str) -> ParsedDocument:
    """The whole document: front matter and every top-level block."""
    tokens: list[Token] = block_parser().parse(text)
    return _to_blocks(text, tokens, 0)


def parse_span(text: str, start: int, end: int) -> list[Block]:
    """The top-level blocks of ``text[start:end]``, a span that starts at a top-level
    heading (or the body's start) and ends at the next one or at the end."""
    tokens: list[Token] = block_parser(front_matter=False).parse(text[start:end])
    return _to_blocks(text[start:end], tokens, start).blocks


def _to_blocks(text: str, tokens: list[Token], base: int) -> ParsedDocument:
    """Blocks of the top-level tokens, as spans of ``text`` shifted by ``base``."""
    starts = line_starts(text)
    last = len(starts) - 1

    def offset(line: int) -> int:
        return base + starts[min(line, last)]

    blocks: list[Block] = []
    front_matter: str | None = None
    body_start = base
    i = 0
    n = len(tokens)
    while i < n:
        token = tokens[i]
        if token.level != 0 or token.map is None:
            i += 1
            continue
        first, end_line = token.map
        start, end = offset(first), offset(end_line)
        if token.type == "front_matter":
            front_matter = token.content
            body_start = end
            i += 1
            continue
        kind = _KINDS.get(token.type, token.type)
        j = i + 1
        if token.nesting == 1:  # walk to the matching close, noting split points
            depth = 1
            splits: list[int] = []
            while j < n and depth:
                inner = tokens[j]
                depth += inner.nesting
                if (
                    inner.nesting == 1
                    and inner.level == 1
                    and inner.type == "list_item_open"
                    and inner.map is not None
                    and inner.map[0] > first
                ):
                    splits.append(offset(inner.map[0]))
                j += 1
        else:
            splits = []
        if kind == "heading":
            source = tokens[i + 1].content if i + 1 < n else ""
            title, anchors = heading_title(source)
            blocks.append(Block(kind, start, end, int(token.tag[1]), title, anchors=anchors))
        elif kind == "table":
            rows = [offset(line) for line in range(first + 2, end_line)]
            blocks.append(
                Block(kind, start, end, splits=tuple(rows[1:]), header_end=offset(first + 2))
            )
        else:
            blocks.append(Block(kind, start, end, splits=tuple(splits)))
        i = j
    return ParsedDocument(body_start=body_start, front_matter=front_matter, blocks=blocks)
