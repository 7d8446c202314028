"""The block structure of a document: what the chunker splits and groups.

A ``Block`` is one top-level block of the source (heading, paragraph, list,
table, fence, HTML block, quote...) as a character span of the source text,
with the places inside it where it may be split (list items, table rows).
Both the Markdown and the HTML readers produce blocks; everything after them
works on spans of the original text only, which is what makes the chunker
lossless.
"""

from __future__ import annotations

from dataclasses import dataclass, field


# Not frozen: a frozen dataclass costs five times as much to build (every field set
# through object.__setattr__), and a document makes thousands of blocks. Nothing
# changes a block once it is built.
@dataclass(slots=True)
class Block:
    kind: str  # "heading", "paragraph", "list", "table", "fence", "html", "quote", ...
    start: int  # character offsets in the source, end exclusive
    end: int
    level: int = 0  # 1-6 for headings
    title: str = ""  # plain text of a heading
    splits: tuple[int, ...] = ()  # offsets inside the block where it may be cut
    header_end: int = 0  # tables: end of the header rows, repeated in later parts
    anchors: tuple[str, ...] = ()  # explicit ids defined in the block (<a id>, {#id})
    # for HTML: the block's text as a reader sees it; None means the source slice
    text: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    body_start: int  # first offset after any front matter
    front_matter: str | None  # raw YAML, None when absent
    blocks: list[Block]
    title: str | None = None  # HTML <title>, used when no metadata names one
