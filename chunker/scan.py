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

from markdown_it.common.utils import mdTrim
from markdown_it.rules_block.table import MAX_AUTOCOMPLETED_CELLS

from chunker.blocks import Block, ParsedDocument
from chunker.lines import (
    BLANK_ENDS,
    SETEXT,
    TERMINATES_TABLE,
    atx_content,
    atx_level,
    closes_fence,
    columns,
    front_matter,
    html_end,
    list_item,
    opens_block,
    table_columns,
)
from chunker.markdown import heading_title, parse_span, split_lines

REGION = "region"  # left to markdown-it: quotes, tables, lists the scanner cannot follow


def scan_markdown(text: str) -> ParsedDocument | None:
    """Front matter and top-level blocks, or None when the full parser must decide.

    The blocks are markdown-it's top-level blocks, except that a stretch
    holding quotes, tables, link reference definitions or a list the scanner
    cannot follow is one ``REGION`` block, which ``expand_regions`` parses when a section has to be
    split. A region never holds a heading.
    """
    lines, starts = split_lines(text)
    front, first = front_matter(lines)
    # like markdown-it, a last line of spaces and tabs (without a line end) is no line
    count = len(lines) - 1 if not lines[-1].strip(" \t") else len(lines)
    scanner = _Scanner(lines, starts, count)
    feed = scanner.feed
    for index in range(first, count):
        if not feed(index, lines[index]):
            return None
    scanner.close(max(first, count))
    return ParsedDocument(
        body_start=starts[min(first, len(starts) - 1)],
        front_matter=front,
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

    def __init__(self, lines: list[str], starts: list[int], count: int) -> None:
        self.lines, self.starts, self.count = lines, starts, count
        self.blocks: list[Block] = []
        self.pending = ""  # open block: "paragraph", "code", "fence", "html", "list", REGION
        self.pending_start = 0  # its first line
        self.code_end = 0  # line after the last non-blank line of an open code block
        self.fence, self.fence_length = "", 0
        self.html_end: object | None = None
        self.para: bool | None = False  # True: in a top-level paragraph; None: cannot tell
        self.container = False  # a list or a quote may be open
        self.prev_blank = False
        self.list_marker = ""  # open list: "-", "+", "*", "." or ")"
        self.list_indent = 0  # column where the current item's content starts
        self.list_items: list[int] = []  # offsets of its items after the first
        # What the open item's lines leave open, for a lazy line (see _item_line): worked
        # out only when a lazy line comes, from the item's first line (or from the last
        # line seen then) on
        self.item_first = 0
        self.item_seen = 0
        self.item = _ENDED
        self.table_columns = 0  # open table: its columns, its body's first line, its rows
        self.table_body = 0
        self.table_rows: list[int] = []

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
        elif self.pending == "list":
            start, end = self.starts[self.pending_start], self.starts[index]
            self.blocks.append(Block("list", start, end, splits=tuple(self.list_items)))
        elif self.pending == "table":
            start, end = self.starts[self.pending_start], self.starts[index]
            header_end = self.starts[self.table_body]
            rows = tuple(self.table_rows[1:])  # as markdown-it: cuts before rows 2, 3...
            self.blocks.append(Block("table", start, end, splits=rows, header_end=header_end))
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

    def feed(self, index: int, line: str) -> bool:
        """Take line ``index``; False when only the full parser can tell what it is."""
        if self.pending == "list":
            taken = self._list_line(index, line)
            if taken is not None:
                return taken
        elif self.pending == "table":
            taken = self._table_line(index, line)
            if taken is not None:
                return taken
        # most lines: empty, or text at column 0, outside a fence and an HTML block
        if not (self.fence or self.html_end is not None):
            if not line:
                return self._blank(index)
            if line[0].isalpha():
                if self.para is True and "|" not in line:  # the paragraph goes on
                    self.prev_blank = False
                    return True
                return self._letter_line(index, line)
        stripped = line.lstrip(" \t")
        if self.html_end is not None:
            if self.html_end is BLANK_ENDS:
                if not stripped:
                    self.html_end, self.para, self.prev_blank = None, False, True
                    self.close(index)
            elif self.html_end.search(stripped):  # type: ignore[attr-defined]
                self.html_end, self.para = None, False
                self.close(index + 1)
            return True
        indent = columns(line, len(line) - len(stripped))
        if self.fence:
            if indent < 4 and closes_fence(stripped, self.fence, self.fence_length):
                self.fence, self.para = "", False
                self.close(index + 1)
            return True
        if not stripped:
            return self._blank(index)
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

    def _blank(self, index: int) -> bool:
        """A line of nothing but spaces and tabs: it ends a paragraph, nothing else."""
        if self.pending == "paragraph":
            self.close(index)
        self.para, self.prev_blank = False, True
        return True

    def _letter_line(self, index: int, line: str) -> bool:
        """A line starting with a letter at column 0: it opens no block but a paragraph."""
        blank_before, self.prev_blank = self.prev_blank, False
        if self.pending == "code":
            self.close(index)
        self._text_line(index, line, 0, blank_before)
        return True

    def _block_line(self, index: int, stripped: str, indent: int, blank_before: bool) -> bool:
        """A non-blank line with 0-3 columns of indent."""
        first_char = stripped[0]
        if first_char in "=-" and self.para is not False and SETEXT.match(stripped):
            if self.para is None:
                return False  # a heading or not: only the full parser knows
            content = "\n".join(self.lines[self.pending_start : index]).strip()
            level = 1 if first_char == "=" else 2
            self.blocks.append(_heading(content, self.starts, self.pending_start, index, level))
            self.pending, self.para = "", False
            return True
        level = atx_level(stripped) if first_char == "#" else 0
        if level:  # the commonest block line: an ATX heading, read here
            if indent and self.container:
                return False  # a list item's heading, or a top-level one?
            self.container, self.para = False, False
            self.close(index)
            self.blocks.append(
                _heading(atx_content(stripped, level), self.starts, index, index, level)
            )
            return True
        opens = opens_block(stripped, self.para)
        if opens == "unsure" or (indent and self.container and opens not in ("", "container")):
            return False  # a list item's heading, fence, HTML or rule, or a top-level one?
        if opens == "container":
            item = list_item(stripped) if not indent else None
            if item is not None and self.para is False and self.pending != REGION:
                self._open("list", index)  # a list whose items the scanner can follow
                self.list_marker, self.list_indent = item
                self.list_items = []
                self.item_first = self.item_seen = index
                return True
            self._unsure(index)
            self.container = True
        elif opens:
            self.container, self.para = False, False
            self._open(opens, index)
            if opens == "rule":
                self.close(index + 1)
            elif opens == "fence":
                self.fence = first_char
                self.fence_length = len(stripped) - len(stripped.lstrip(first_char))
            else:
                self.html_end = html_end(stripped)
                if self.html_end is None:  # ends on its first line
                    self.close(index + 1)
        else:
            self._text_line(index, stripped, indent, blank_before)
        return True

    def _list_line(self, index: int, line: str) -> bool | None:
        """A line while a list is open: True when the list takes it, None when the list
        ended before it (it is then read at the top level), False to give up.

        A line indented to the item's content belongs to the item, whatever it
        is; an item of the same list starts at column 0. A line less indented
        ends the list when it cannot continue an item's paragraph: after a blank
        line, or when it opens a heading, fence, HTML block or rule. Anything
        else (a lazy line, a sibling item at columns 1-3, another kind of list,
        a quote) turns the list into a region for markdown-it.
        """
        stripped = line.lstrip(" \t")
        if not stripped:
            self.prev_blank = True
            return True
        indent = columns(line, len(line) - len(stripped))
        blank_before, self.prev_blank = self.prev_blank, False
        if indent >= self.list_indent:
            return True
        opens = opens_block(stripped, False if blank_before else None) if indent < 4 else "?"
        if opens == "unsure":
            return False
        if opens == "container":
            item = list_item(stripped) if not indent else None
            if item is not None and item[0] == self.list_marker:
                self.list_items.append(self.starts[index])
                self.list_indent = item[1]
                self.item_first = self.item_seen = index
                return True
        elif opens in ("heading", "fence", "html", "rule") or (opens == "" and blank_before):
            self.close(index)
            self.prev_blank = blank_before
            self.container, self.para = False, False
            return None
        elif opens == "" and _item_line(stripped) == _TEXT and self._item_state(index) == _TEXT:
            return True  # a lazy line: it goes on with the item's paragraph
        self.pending, self.container, self.para = REGION, True, None
        return True

    def _item_state(self, upto: int) -> str:
        """What the open item's lines before ``upto`` leave open (``_TEXT``, ``_ENDED``
        or ``_LOST``)."""
        state = _ENDED if self.item_seen == self.item_first else self.item
        for index in range(self.item_seen, upto):
            if state == _LOST:
                break
            line = self.lines[index]
            if index == self.item_first:  # the item's marker, at column 0
                state = _item_line(line[self.list_indent :])
                continue
            stripped = line.lstrip(" \t")
            if not stripped:
                state = _ENDED if state == _TEXT else state
                continue
            indent = columns(line, len(line) - len(stripped))
            if indent < self.list_indent:
                continue  # a lazy line, taken because it went on with a paragraph
            # four columns in, after anything but paragraph text: indented code
            deep = indent >= self.list_indent + 4 and state != _TEXT
            state = _LOST if deep else _item_line(stripped)
        self.item, self.item_seen = state, upto
        return state

    def _text_line(self, index: int, stripped: str, indent: int, blank_before: bool) -> None:
        """A line of paragraph text (it opens no other block, or a table)."""
        if self.para is False:  # a plain line after a blank line or a closed block
            if self.container and not (blank_before and indent == 0):
                self.para = None  # may be a list item's paragraph
            elif "|" in stripped and self._table(index, stripped):
                self.container = False
            elif "|" in stripped or (stripped[0] == "[" and _may_define(stripped)):
                self.container = False
                self._open(REGION, index)  # a link reference definition, maybe
                self.para = None
            else:
                self.container, self.para = False, True
                self._open("paragraph", index)
        elif self.para is True and "|" in stripped:
            self._table(index, stripped)  # a table may interrupt the paragraph here

    def _table(self, index: int, stripped: str) -> bool:
        """Open a table at line ``index`` if the next line makes it one (see
        ``table_columns``); it then closes the paragraph in progress."""
        if index + 1 >= self.count:
            return False
        columns_ = table_columns(stripped, self.lines[index + 1])
        if not columns_:
            return False
        self._open("table", index)
        self.para = False
        self.table_columns, self.table_body, self.table_rows = columns_, index + 2, []
        return True

    def _table_line(self, index: int, line: str) -> bool | None:
        """A line while a table is open: True when the table takes it as a row, None
        when the table ended before it (it is then read at the top level), False to
        give up.

        As markdown-it's table rule: every line is a row until a blank one (by
        CommonMark's wider whitespace), an indented code line, or one that opens a
        heading, fence, quote, list, rule or an HTML block that may interrupt.
        """
        if index < self.table_body:
            return True  # the delimiter row
        stripped = line.lstrip(" \t")
        if (
            not mdTrim(stripped)
            or columns(line, len(line) - len(stripped)) >= 4
            or opens_block(stripped, True) in TERMINATES_TABLE
        ):
            self.close(index)
            self.para = self.container = False
            return None
        self.table_rows.append(self.starts[index])
        # markdown-it stops a table whose rows leave too many cells empty: past this
        # many rows that could happen, the full parser decides
        return len(self.table_rows) * self.table_columns <= MAX_AUTOCOMPLETED_CELLS


# What a list item's last line leaves open, for a lazy line after it:
_TEXT = "text"  # a paragraph: a lazy line goes on with it
_ENDED = "ended"  # a one-line block (heading, rule) or a blank line: nothing to go on with
_LOST = "lost"  # maybe a block of several lines (fence, HTML, table, code): the scanner
# cannot tell what the item's lines are any more, so a lazy line makes the list a region


def _item_line(content: str) -> str:
    """What a line inside a list item is (``_TEXT``, ``_ENDED`` or ``_LOST``), from its
    first non-blank character, looking past the list and quote markers it opens.

    Conservative: a line that might open anything but paragraph text, a heading
    or a rule (a fence, HTML, a table row, a link reference definition, a
    setext underline, code after a marker, an empty item or quote) is ``_LOST``.
    """
    while True:
        if not content or content[0] in " \t<[" or "|" in content or SETEXT.match(content):
            return _LOST
        if content[0] == ">":
            content = content[2:] if content[1:2] == " " else content[1:]
            continue
        opens = opens_block(content, True)
        if opens == "":
            return _TEXT
        if opens in ("heading", "rule"):
            return _ENDED
        item = list_item(content) if opens == "container" else None
        if item is None:
            return _LOST
        content = content[item[1] :]


def _may_define(stripped: str) -> bool:
    """Whether a line starting with ``[`` may begin a link reference definition
    (``[label]: destination``): not when its label closes on the line and no ``:``
    follows. Conservative: a label with a backslash or a ``[`` in it may."""
    close = stripped.find("]")
    if close < 0:
        return True  # the label may go on to the next line
    label = stripped[1:close]
    return "\\" in label or "[" in label or stripped[close + 1 : close + 2] == ":"


def _heading(content: str, starts: list[int], first: int, last: int, level: int) -> Block:
    """A heading on lines ``first`` to ``last``."""
    title, anchors = heading_title(content)
    return Block("heading", starts[first], starts[last + 1], level, title, anchors=anchors)
