"""The line scanner finds exactly the top-level blocks markdown-it finds, or defers to it.

Documents are generated line by line from the lines that decide block
structure (headings at every indent, setext underlines, fences, the seven
kinds of HTML block and their ends, rules, list items, quotes, table rows,
link reference definitions, indented code, tabs, front matter), so that the
scanner's state machine meets them in every order. Whenever the scanner
answers, its blocks (with regions expanded by markdown-it) must equal a full
markdown-it parse: kinds, spans, heading levels and titles, list and table
split points. The corpus test (tests/corpus) does the same on every version
of both real libraries.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunker.blocks import Block
from chunker.markdown import parse_markdown
from chunker.scan import REGION, expand_regions, scan_markdown

DECIDING_LINES = [
    "# Refunds", "## Exceptions ##", "   ### Indented three", "    # four spaces: code",
    "\t# tab: code", " \t## space and tab", "#NoSpace", "####### seven", "#",
    "Title line", "===", "---", "  --  ", "- - -", "***", "___", "=",
    "```", "```py", "~~~~", "``` has ` backtick", "   ```", "~~~",
    "<div>", "</div>", "<!-- comment", "still comment -->", "<script>", "</script>",
    "<?php", "?>", "<!DOCTYPE html>", "<![CDATA[", "]]>", "<span>", "<a href=\"x\">",
    "  <div>", "<custom-tag>",
    "- item", "* item", "+ item", "1. item", "2) item", "-", "  - nested", "    - deep",
    "> quote", "> # quoted heading", ">",
    "| a | b |", "|---|---|", "a | b", "--- | ---", "| x |",
    "[ref]: /url", "[ref]: #anchor 'title'",
    "    indented code", "\tcode after tab",
    "plain text with words", "  two-space text", "text with a | pipe",
    "", "", "", "   ", "\t", "...",
    "1986. a year", "-    wide item", "10. ten", "1) paren", " - one-space item", "-\ttab item",
    "  ```", "   continuation", "      six spaces", "-     five spaces", "  > indented quote",
    "<pre>", "</pre>", "<style>",
    "</span>", "  ===", "Setext ==", "### closed ###   ", "\u00a0# nbsp first",
    "{: #ial }", "  # item heading", "* # heading item", "  | a |", "  [ref]: /x", "* ```",
    "> - quoted item", "  > - deeper", "  * >", "   lazy three",
    "  ***", "    four-space text", "1. #### numbered heading", "  > # quoted heading in item",
    "| h1 | h2 |", "|:--|--:|", "| --- |", "h | h", "--|--", "|-|-|-|", "| a \\| b |",
    "| -- | x |", "\u00a0", "| :-: | - |", "  |---|---|", "    |---|---|", "a | b | c",
    "[Learn more](https://example.com) and text", "[label]:", "[a\\]b]: /x", "[open label",
    "closed]: /url", "[x]: <y> 'title'", "[x] [y]",
]  # fmt: skip


@st.composite
def documents(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.sampled_from(DECIDING_LINES), max_size=40))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    if draw(st.booleans()):
        lines = ["---", "title: T", draw(st.sampled_from(["---", "...", "-----", "x"])), *lines]
    return ending.join(lines) + draw(st.sampled_from(["", ending]))


def _shape(blocks: list[Block]) -> list[tuple[object, ...]]:
    return [
        (b.kind, b.start, b.end, b.level, b.title, b.splits, b.header_end, b.anchors)
        for b in blocks
    ]


def _assert_same_as_markdown_it(text: str) -> bool:
    """Compare when the scanner answers; True when it did."""
    fast = scan_markdown(text)
    if fast is None:
        return False
    full = parse_markdown(text)
    assert (fast.front_matter, fast.body_start) == (full.front_matter, full.body_start)
    assert _shape(expand_regions(text, fast.blocks)) == _shape(full.blocks)
    for block in fast.blocks:  # a region never hides a section boundary
        if block.kind == REGION:
            assert all(b.kind != "heading" for b in expand_regions(text, [block]))
    return True


@settings(max_examples=1500, deadline=None)
@given(documents())
def test_generated_documents_scan_like_markdown_it(text: str) -> None:
    _assert_same_as_markdown_it(text)


# Tables meet their header rows, delimiter rows and every line that may end them
# far more often here than among all the deciding lines.
TABLE_LINES = [
    "| a | b |", "a | b", "| a |", "|---|---|", "--- | ---", "|:-:|", "| -- |", "|-|-|-|",
    "| 1 | 2 |", "1 | 2 | 3", "row without pipes", "| a \\| b |", "", " ", "\u00a0",
    "    | code |", "# heading", "> quote", "- item", "1. item", "***", "```", "<div>",
    "<span>", "Para text", "===", "---", "  | indented |", "\t| tab |",
]  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(TABLE_LINES), max_size=30))
def test_generated_tables_scan_like_markdown_it(lines: list[str]) -> None:
    _assert_same_as_markdown_it("\n".join(lines))


@pytest.mark.parametrize(
    "text",
    [
        "Intro\nmore intro\n===\nbody",  # a two-line setext heading
        "```\n# not a heading\n```\n# heading",
        "<!--\n# hidden\n-->\n# shown",
        "<div>\n# inside the HTML block\n\n# after the blank line",
        "Para\n<span>\n# interrupts",  # a lone tag cannot interrupt a paragraph
        "- item\n\n# closes the list",
        "| a | b |\n|---|---|\n| 1 | 2 |\n# ends the table",
        "    code\n# heading",
        "---\ntitle: x\n---\n# after front matter",
        "Para\n- item\n\ntext",
        "- item\n  # inside the item\n- next item\n\n  more of it\n\n# after the list",
        "1. one\n2. two\n\n3) another list",
        # lazy lines go on with a list item's paragraph; what follows them is decided
        "- item\nlazy line\n  # heading in the item",
        "- item\nlazy line\n---",  # a rule: a setext underline cannot be lazy
        "- item\nlazy\n===",
        "* a\n  * b\nlazy\n  - c\nlazy 2\n# after",
        "1. x\n    more\n{: #kramdown-ial }\n\n# h",
        "* a\n  ```\n  code\nnot lazy: the fence is no paragraph",
        "* # heading item\nnot lazy",
        "- item\n  | a |\nlazy?\n# x",  # after a table row: a region, for markdown-it
        "5. #### Heading item\n\n    Its paragraph.\nlazy line\n\n# after",
        "- ## heading\nnot lazy: a heading is no paragraph\n# h",
        # GFM tables: the scanner reads them as markdown-it's table rule does
        "| a | b |\n|---|---|\n| 1 | 2 |\nplain row\n> quote ends it\n# h",
        "Para\na | b\n--|--\nrow\n\n# h",  # a table interrupts a paragraph
        "| a | b |\n|---|\nnot a table: two columns, one delimiter\n# h",
        "| a |\n|---|\n| 1 |\n\u00a0\n# h",  # a no-break space line ends the table
        "| a |\n|---|\n    code ends it\n# h",
    ],
)
def test_the_cases_that_decide_headings(text: str) -> None:
    assert _assert_same_as_markdown_it(text), "the scanner should decide this one itself"


@pytest.mark.parametrize(
    "text",
    [
        "- item\n<span>\n# x",  # lone tag after a lazy line
    ],
)
def test_undecidable_lines_defer_to_markdown_it(text: str) -> None:
    assert scan_markdown(text) is None
