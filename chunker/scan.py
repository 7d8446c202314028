"""The fast path for Markdown: the top-level blocks, found line by line.

markdown-it builds a token for every block at every depth, which costs most
of a chunker run's time and memory. The chunker needs much less: the
top-level headings (sections), the front matter, and the other top-level
blocks only inside a section too big for one chunk. This scanner finds
exactly the blocks markdown-it finds at the top level (tested against it on
every version of both corpora and on generated documents), except that a
stretch holding lists, quotes, tables or link reference definitions stays
one ``REGION`` block, parsed by markdown-it only if its section is split (a
top-level block boundary closes every container, so a region parses the
same alone as in its document).

It keeps just enough state to be sure: an open fence, an open HTML block,
an open indented code block, whether the line belongs to a top-level
paragraph (a setext underline turns the whole paragraph into a heading),
and whether a list or a quote may still be open. Whenever that state cannot
decide a line that could be a heading or could hide one (an indented
heading, fence or HTML block that may sit in a list item, a setext
underline under a lazy line or a table row, a lone HTML tag after one), it
gives up and returns None; the caller then runs the full parser.
"""

from __future__ import annotations

import re

from markdown_it.rules_block.html_block import HTML_SEQUENCES

from chunker.blocks import Block, ParsedDocument
from chunker.markdown import heading_title, parse_span, split_lines

_ATX = re.compile(r"#{1,6}(?=[ \t]|$)")
_SETEXT = re.compile(r"(?:=+|-+)[ \t]*$")
_HR = re.compile(r"([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LIST = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")
_BLANK_ENDS = object()  # HTML blocks of types 6 and 7 end at a blank line
_CANNOT_INTERRUPT = len(HTML_SEQUENCES) - 1  # type 7: a lone tag
REGION = "region"  # blocks the scanner leaves to markdown-it: lists, quotes, tables


def scan_markdown(text: str) -> ParsedDocument | None:
    """Front matter and top-level blocks, or None when the full parser must decide.

    The blocks are markdown-it's top-level blocks, except that a stretch
    holding lists, quotes, tables or link reference definitions is one
    ``REGION`` block, which ``expand_regions`` parses when a section has to be
    split. A region never holds a heading.
    """
    lines, starts = split_lines(text)
    front_matter, first = _front_matter(lines)
    scanner = _Scanner(lines, starts)
    # like markdown-it, a last line of spaces and tabs (without a line end) is no line
    count = len(lines) - 1 if not lines[-1].strip(" \t") else len(lines)
    for index in range(first, count):
        if not scanner.feed(index):
            return None
    scanner.close(max(first, count))
    return ParsedDocument(
        body_start=starts[min(first, len(starts) - 1)],
        front_matter=front_matter,
        blocks=scanner.blocks,
    )


def expand_regions(text: str, blocks: list[Block]) -> list[Block]:
    """``blocks`` with every ``REGION`` replaced by the blocks markdown-it finds in it."""
    if all(block.kind != REGION for block in blocks):
        return blocks
    expanded: list[Block] = []
    for block in blocks:
        if block.kind == REGION:
            expanded.extend(parse_span(text, block.start, block.end))
        else:
            expanded.append(block)
    return expanded


class _Scanner:
    """Line-by-line state of the top level (see the module docstring)."""

    def __init__(self, lines: list[str], starts: list[int]) -> None:
        self.lines, self.starts = lines, starts
        self.blocks: list[Block] = []
        self.pending = ""  # open block: "paragraph", "code", "fence", "html", REGION or ""
        self.pending_start = 0  # its first line
        self.code_end = 0  # line after the last non-blank line of an open code block
        self.fence, self.fence_length = "", 0
        self.html_end: object | None = None
        self.para: bool | None = False  # True: in a top-level paragraph; None: cannot tell
        self.container = False  # a list or a quote may be open
        self.prev_blank = False

    def _emit(self, kind: str, start: int, end: int) -> None:
        self.blocks.append(Block(kind, self.starts[start], self.starts[end]))

    def _open(self, kind: str, index: int) -> None:
        """Close the open block at ``index`` and open ``kind`` there."""
        self.close(index)
        self.pending, self.pending_start = kind, index

    def close(self, index: int) -> None:
        """Close the open block so that it ends where line ``index`` starts."""
        if self.pending == "code":
            self._emit("code", self.pending_start, self.code_end)
        elif self.pending:
            self._emit(self.pending, self.pending_start, index)
        self.pending = ""

    def _unsure(self, index: int) -> None:
        """From here the top level is the full parser's call: open a region, taking in
        the paragraph in progress (a table or a list may interrupt it)."""
        if self.para is True:  # the paragraph in progress becomes the region's start
            self.pending = REGION
        elif self.pending != REGION:
            self._open(REGION, index)
        self.para = None

    def feed(self, index: int) -> bool:
        """Take line ``index``; False when only the full parser can tell what it is."""
        line = self.lines[index]
        # most lines: empty, or text at column 0, outside a fence and an HTML block
        if not (self.fence or self.html_end is not None):
            if not line:
                if self.pending == "paragraph":
                    self.close(index)
                self.para, self.prev_blank = False, True
                return True
            if line[0].isalpha():
                if self.para is True and "|" not in line:  # the paragraph goes on
                    self.prev_blank = False
                    return True
                return self._common_line(index, line)
        stripped = line.lstrip(" \t")
        indent = _columns(line, len(line) - len(stripped))
        if self.fence:
            if indent < 4 and _closes_fence(stripped, self.fence, self.fence_length):
                self.fence, self.para = "", False
                self.close(index + 1)
            return True
        if self.html_end is not None:
            if self.html_end is _BLANK_ENDS:
                if not stripped:
                    self.html_end, self.para, self.prev_blank = None, False, True
                    self.close(index)
            elif self.html_end.search(stripped):  # type: ignore[attr-defined]
                self.html_end, self.para = None, False
                self.close(index + 1)
            return True
        if not stripped:
            return self._common_line(index, "")
        blank_before, self.prev_blank = self.prev_blank, False
        if indent >= 4:  # indented code, or a continuation line
            if self.pending == "code":
                self.code_end = index + 1
            elif self.para is not True:
                if self.pending == REGION:  # a code block may be open in it: its call
                    self.para = None
                else:
                    self._open("code", index)
                    self.code_end = index + 1
            return True
        if self.pending == "code":
            self.close(index)
        return self._block_line(index, stripped, indent, blank_before)

    def _common_line(self, index: int, line: str) -> bool:
        """An empty line, or one starting with a letter (which opens no block but a paragraph)."""
        if not line:
            if self.pending == "paragraph":
                self.close(index)
            self.para, self.prev_blank = False, True
            return True
        blank_before, self.prev_blank = self.prev_blank, False
        if self.pending == "code":
            self.close(index)
        self._text_line(index, line, 0, blank_before)
        return True

    def _block_line(self, index: int, stripped: str, indent: int, blank_before: bool) -> bool:
        """A non-blank line with 0-3 columns of indent."""
        first_char = stripped[0]
        if first_char in "=-" and self.para is not False and _SETEXT.match(stripped):
            if self.para is None:
                return False  # a heading or not: only the full parser knows
            content = "\n".join(self.lines[self.pending_start : index]).strip()
            level = 1 if first_char == "=" else 2
            self.blocks.append(_heading(content, self.starts, self.pending_start, index, level))
            self.pending, self.para = "", False
            return True
        opens = _opens_block(stripped, self.para)
        if opens == "unsure" or (indent and self.container and opens not in ("", "container")):
            return False  # a list item's heading, fence, HTML or rule, or a top-level one?
        if opens == "container":
            self._unsure(index)
            self.container = True
        elif opens:
            self.container, self.para = False, False
            self._open(opens, index)
            if opens == "heading":
                level = len(_ATX.match(stripped).group())  # type: ignore[union-attr]
                self.pending = ""
                self.blocks.append(
                    _heading(_atx_content(stripped, level), self.starts, index, index, level)
                )
            elif opens == "rule":
                self.close(index + 1)
            elif opens == "fence":
                self.fence = first_char
                self.fence_length = len(stripped) - len(stripped.lstrip(first_char))
            else:
                self.html_end = _html_end(stripped)
                if self.html_end is None:  # ends on its first line
                    self.close(index + 1)
        else:
            self._text_line(index, stripped, indent, blank_before)
        return True

    def _text_line(self, index: int, stripped: str, indent: int, blank_before: bool) -> None:
        """A line of paragraph text (it opens no other block)."""
        if self.para is False:  # a plain line after a blank line or a closed block
            if self.container and not (blank_before and indent == 0):
                self.para = None  # may be a list item's paragraph
            elif "|" in stripped or stripped[0] == "[":
                self.container = False
                self._open(REGION, index)  # a table header or a link reference definition
                self.para = None
            else:
                self.container, self.para = False, True
                self._open("paragraph", index)
        elif self.para is True and "|" in stripped:
            self._unsure(index)  # a table may interrupt the paragraph here


def _opens_block(stripped: str, para: bool | None) -> str:
    """What a line with 0-3 columns of indent starts: "heading", "fence", "html",
    "rule", "container" (list item or quote), "unsure", or "" for paragraph text."""
    first_char = stripped[0]
    if first_char == "#" and _ATX.match(stripped):
        return "heading"
    if first_char in "`~":
        run = len(stripped) - len(stripped.lstrip(first_char))
        if run >= 3 and not (first_char == "`" and "`" in stripped[run:]):
            return "fence"
    if first_char == "<":
        kind = _html_kind(stripped)
        if kind is not None:
            if kind != _CANNOT_INTERRUPT:
                return "html"
            if para is None:
                return "unsure"
            return "" if para else "html"
    if first_char in "-*_" and _HR.match(stripped):
        return "rule"
    if first_char == ">" or _LIST.match(stripped):
        return "container"
    return ""


def _front_matter(lines: list[str]) -> tuple[str | None, int]:
    """Front matter as markdown-it's front_matter plugin reads it: (content, first body line)."""
    if not lines or not lines[0].startswith("---"):
        return None, 0
    markers = len(lines[0]) - len(lines[0].lstrip("-"))
    for index in range(1, len(lines)):
        line = lines[index]
        stripped = line.lstrip(" \t")
        if line.startswith("...") and not line[3:].strip(" \t"):
            break
        if not stripped.startswith("-") or _columns(line, len(line) - len(stripped)) >= 4:
            continue
        rest = stripped.lstrip("-")
        if len(stripped) - len(rest) >= markers and not rest.strip(" \t"):
            break
    else:
        return None, 0
    return "\n".join(lines[1:index]), index + 1


def _columns(line: str, count: int) -> int:
    """Width of the first ``count`` characters (spaces and tabs), tabs to multiples of 4."""
    if "\t" not in line[:count]:
        return count
    width = 0
    for char in line[:count]:
        width = width + 4 - width % 4 if char == "\t" else width + 1
    return width


def _closes_fence(stripped: str, fence: str, length: int) -> bool:
    rest = stripped.lstrip(fence)
    return len(stripped) - len(rest) >= length and not rest.strip(" \t")


def _html_kind(stripped: str) -> int | None:
    for kind, (start, _end, _interrupts) in enumerate(HTML_SEQUENCES):
        if start.search(stripped):
            return kind
    return None


def _html_end(stripped: str) -> object | None:
    """What ends the HTML block this line opens: a pattern, a blank line, or None (it ends here)."""
    end = HTML_SEQUENCES[_html_kind(stripped) or 0][1]
    if end.search(""):
        return _BLANK_ENDS
    return None if end.search(stripped) else end


def _atx_content(stripped: str, level: int) -> str:
    """The text of an ATX heading: without the opening and the optional closing ``#`` run."""
    end = len(stripped.rstrip(" \t"))
    end = max(end, level)
    closing = end
    while closing > level and stripped[closing - 1] == "#":
        closing -= 1
    if closing > level and stripped[closing - 1] in " \t":
        end = closing
    return stripped[level:end].strip()


def _heading(content: str, starts: list[int], first: int, last: int, level: int) -> Block:
    """A heading on lines ``first`` to ``last``."""
    title, anchors = heading_title(content)
    return Block("heading", starts[first], starts[last + 1], level, title, anchors=anchors)
