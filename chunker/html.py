"""HTML to blocks, with the standard library's ``html.parser``.

For rich text stored by a CMS: ``<h1>``-``<h6>`` start sections; paragraphs,
list items, table rows and other block elements are where a long section
may be cut. Spans are offsets of the original HTML; ``html_to_text`` turns a
chunk's span into the plain text a reader (and an embedding model) sees.
The parser is lenient: unclosed or stray tags never raise.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from chunker.blocks import Block, ParsedDocument

_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = frozenset(
    {
        "p",
        "ul",
        "ol",
        "li",
        "table",
        "tr",
        "pre",
        "blockquote",
        "div",
        "section",
        "article",
        "figure",
        "dl",
        "dt",
        "dd",
        "hr",
        "br",
        "details",
        "aside",
        "header",
        "footer",
        "main",
    }
)
_SKIP = frozenset({"script", "style", "template", "head"})
# html.parser rescans to the end of the text for every start tag that never
# closes ("<a <a <a ..." is quadratic). Such a "<" is text anyway: it is read as
# a NUL (same length, so offsets hold; chunk_document refuses real NULs) and
# given back as "<" in the text. The lookahead stops at the next "<": linear.
_UNCLOSED_TAG = re.compile(r"<(?=[A-Za-z])(?![A-Za-z][^<>]*>)")
_PLACEHOLDER = "\x00"


def _defuse(html: str) -> str:
    return _UNCLOSED_TAG.sub(_PLACEHOLDER, html)


class _Offsets:
    def __init__(self, text: str) -> None:
        self.starts = [0]
        position = text.find("\n")
        while position >= 0:
            self.starts.append(position + 1)
            position = text.find("\n", position + 1)

    def at(self, line: int, column: int) -> int:
        return self.starts[line - 1] + column


class _BlockReader(HTMLParser):
    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.text = text
        self.offsets = _Offsets(text)
        self.blocks: list[Block] = []
        self.heading: tuple[int, int, list[str], list[str]] | None = None  # level, start, text, ids
        self.title: list[str] | None = None  # the <title>'s text while inside it
        self.titles: list[str] = []

    def _here(self) -> int:
        return self.offsets.at(*self.getpos())

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        ids = [value for name, value in attrs if name in {"id", "name"} and value]
        if tag == "title":
            self.title = []
        elif tag in _HEADINGS and self.heading is None:
            self.heading = (_HEADINGS[tag], self._here(), [], ids)
        elif self.heading is not None:
            self.heading[3].extend(ids)
        elif tag in _BLOCKS or ids:
            self.blocks.append(Block("html", self._here(), self._here(), anchors=tuple(ids)))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.title is not None:
            self.titles.append(" ".join("".join(self.title).split()))
            self.title = None
        elif self.heading is not None and tag in _HEADINGS:
            level, start, parts, ids = self.heading
            end = self.text.find(">", self._here()) + 1 or len(self.text)
            title = " ".join("".join(parts).replace(_PLACEHOLDER, "<").split())
            self.blocks.append(Block("heading", start, end, level, title, anchors=tuple(ids)))
            self.heading = None

    def handle_data(self, data: str) -> None:
        if self.title is not None:
            self.title.append(data)
        elif self.heading is not None:
            self.heading[2].append(data)


class _TextReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skipping += 1
        elif tag in _BLOCKS or tag in _HEADINGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag in _BLOCKS or tag in _HEADINGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def parse_html(text: str) -> ParsedDocument:
    reader = _BlockReader(text)
    reader.feed(_defuse(text))
    reader.close()
    if reader.heading is not None:  # an unclosed heading runs to the end
        level, start, parts, ids = reader.heading
        heading = " ".join("".join(parts).replace(_PLACEHOLDER, "<").split())
        reader.blocks.append(Block("heading", start, len(text), level, heading, anchors=tuple(ids)))
    blocks = sorted(reader.blocks, key=lambda block: block.start)
    named = next((title for title in reader.titles if title), None)
    return ParsedDocument(body_start=0, front_matter=None, blocks=_dedupe(blocks), title=named)


def _dedupe(blocks: list[Block]) -> list[Block]:
    """One block per start offset, headings first; block ends are the next block's start."""
    kept: list[Block] = []
    for block in blocks:
        if kept and kept[-1].start == block.start:
            if block.kind == "heading":
                kept[-1] = block
            continue
        kept.append(block)
    return kept


def html_to_text(fragment: str) -> str:
    """The text of an HTML fragment: tags dropped, entities decoded, blocks on their own lines."""
    reader = _TextReader()
    reader.feed(_defuse(fragment))
    reader.close()
    lines = "".join(reader.parts).replace(_PLACEHOLDER, "<").split("\n")
    return "\n".join(" ".join(line.split()) for line in lines if line.strip())
