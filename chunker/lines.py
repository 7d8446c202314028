"""What one Markdown line is at the top level, as markdown-it's block rules read it.

Helpers of the line scanner (``chunker.scan``): each answers for a line
(without its line end, and for most without its indent) what markdown-it's
rule for that construct would decide, with markdown-it's own patterns where
it exposes them (the HTML block starts and ends).
"""

from __future__ import annotations

import re

from markdown_it.common.utils import mdTrim
from markdown_it.rules_block.html_block import HTML_SEQUENCES
from markdown_it.rules_block.table import escapedSplit, headerLineRe

SETEXT = re.compile(r"(?:=+|-+)[ \t]*$")
_HR = re.compile(r"([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LIST = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")
BLANK_ENDS = object()  # HTML blocks of types 6 and 7 end at a blank line
_CANNOT_INTERRUPT = len(HTML_SEQUENCES) - 1  # type 7: a lone tag


def opens_block(stripped: str, para: bool | None) -> str:
    """What a line with 0-3 columns of indent starts: "heading", "fence", "html",
    "rule", "container" (list item or quote), "unsure", or "" for paragraph text."""
    first_char = stripped[0]
    if first_char == "#" and atx_level(stripped):
        return "heading"
    if first_char in "`~":
        run = len(stripped) - len(stripped.lstrip(first_char))
        if run >= 3 and not (first_char == "`" and "`" in stripped[run:]):
            return "fence"
    if first_char == "<":
        kind = html_kind(stripped)
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


def atx_level(stripped: str) -> int:
    """The level of the ATX heading a line opens (1-6 ``#`` then a space, a tab or the
    line's end), or 0."""
    level = len(stripped) - len(stripped.lstrip("#"))
    return level if level <= 6 and stripped[level : level + 1] in ("", " ", "\t") else 0


_ITEM = re.compile(r"([-+*]|\d{1,9}[.)])( *)(.*)")


def list_item(stripped: str) -> tuple[str, int] | None:
    """(marker, content column) of a list item line at column 0, as markdown-it reads it;
    None for what the scanner leaves to markdown-it (no content, tabs)."""
    match = _ITEM.match(stripped)
    if match is None:
        return None
    marker, spaces, content = match.groups()
    if not spaces or not content or content[0] == "\t":
        return None
    return marker[-1], len(marker) + (len(spaces) if len(spaces) <= 4 else 1)


_DELIMITER_ROW = re.compile(r"[|\-: \t]*")
TERMINATES_TABLE = frozenset(("heading", "fence", "html", "rule", "container"))


def table_columns(header: str, delimiter: str) -> int:
    """How many columns a GFM table has whose header line (from its first non-blank
    character) and delimiter row (the next line, whole) are these, as markdown-it's
    table rule reads them; 0 when they make no table."""
    row = delimiter.lstrip(" \t")
    if columns(delimiter, len(delimiter) - len(row)) >= 4 or len(row) < 2:
        return 0
    first, second = row[0], row[1]
    if first not in "|-:" or second not in "|-: \t" or (first == "-" and second in " \t"):
        return 0
    if not _DELIMITER_ROW.fullmatch(row):
        return 0
    cells = row.split("|")
    aligns = 0
    for position, cell in enumerate(cells):
        trimmed = mdTrim(cell)
        if not trimmed:
            if position in (0, len(cells) - 1):
                continue  # empty cells outside the outer pipes
            return 0
        if not headerLineRe.search(trimmed):
            return 0
        aligns += 1
    text = mdTrim(header)
    if "|" not in text:
        return 0
    names = escapedSplit(text)
    if names and names[0] == "":
        names.pop(0)
    if names and names[-1] == "":
        names.pop()
    return aligns if names and len(names) == aligns else 0


def front_matter(lines: list[str]) -> tuple[str | None, int]:
    """Front matter as markdown-it's front_matter plugin reads it: (content, first body line)."""
    if not lines or not lines[0].startswith("---"):
        return None, 0
    markers = len(lines[0]) - len(lines[0].lstrip("-"))
    for index in range(1, len(lines)):
        line = lines[index]
        stripped = line.lstrip(" \t")
        if line.startswith("...") and not line[3:].strip(" \t"):
            break
        if not stripped.startswith("-") or columns(line, len(line) - len(stripped)) >= 4:
            continue
        rest = stripped.lstrip("-")
        if len(stripped) - len(rest) >= markers and not rest.strip(" \t"):
            break
    else:
        return None, 0
    return "\n".join(lines[1:index]), index + 1


def columns(line: str, count: int) -> int:
    """Width of the first ``count`` characters (spaces and tabs), tabs to multiples of 4."""
    if not count or "\t" not in line[:count]:
        return count
    width = 0
    for char in line[:count]:
        width = width + 4 - width % 4 if char == "\t" else width + 1
    return width


def closes_fence(stripped: str, fence: str, length: int) -> bool:
    rest = stripped.lstrip(fence)
    return len(stripped) - len(rest) >= length and not rest.strip(" \t")


def html_kind(stripped: str) -> int | None:
    for kind, (start, _end, _interrupts) in enumerate(HTML_SEQUENCES):
        if start.search(stripped):
            return kind
    return None


def html_end(stripped: str) -> object | None:
    """What ends the HTML block this line opens: a pattern, a blank line, or None (it ends here)."""
    end = HTML_SEQUENCES[html_kind(stripped) or 0][1]
    if end.search(""):
        return BLANK_ENDS
    return None if end.search(stripped) else end


def atx_content(stripped: str, level: int) -> str:
    """The text of an ATX heading: without the opening and the optional closing ``#`` run."""
    end = len(stripped.rstrip(" \t"))
    end = max(end, level)
    closing = end
    while closing > level and stripped[closing - 1] == "#":
        closing -= 1
    if closing > level and stripped[closing - 1] in " \t":
        end = closing
    return stripped[level:end].strip()
