"""Blocks to a tree of sections: one per heading, plus the preamble.

A section runs from its heading to the next heading of the same or a higher
level; headings that skip levels simply nest under the nearest heading above
them. Text before the first heading is the preamble (level 0), which belongs
to no heading. Slugs follow GitHub's rule (lowercase, punctuation dropped,
spaces to hyphens) and are made unique in document order (``-1``, ``-2``...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from chunker.blocks import Block

_NOT_SLUG = re.compile(r"[^\w\- ]")
_KRAMDOWN_DROP = re.compile(r"[^a-z0-9 \-]")
_MAX_SLUG = 80
# A heading path is context repeated in every chunk's embed text: a heading of
# a megabyte would be copied into each part. Longer titles are cut at a word.
MAX_PATH_TITLE = 200
PREAMBLE_SLUG = "_preamble"


@dataclass(slots=True)
class Section:
    index: int
    level: int  # 0 for the preamble, else the heading level
    title: str
    path: tuple[str, ...]  # headings above this one, then its own
    start: int
    own_end: int  # end of its own content (before its first subsection)
    end: int  # end including subsections
    blocks: list[Block]
    parent: int | None
    slug: str = ""
    children: list[int] = field(default_factory=list)
    anchors: list[str] = field(default_factory=list)  # explicit ids defined in the section


def path_title(title: str) -> str:
    """``title`` as it appears in heading paths: at most ``MAX_PATH_TITLE`` characters."""
    if len(title) <= MAX_PATH_TITLE:
        return title
    cut = title.rfind(" ", 0, MAX_PATH_TITLE)
    return title[: cut if cut > 0 else MAX_PATH_TITLE - 1].rstrip() + "…"


def github_slug(title: str) -> str:
    slug = title.strip().lower()
    if not slug.replace(" ", "").replace("-", "").replace("_", "").isalnum():
        slug = _NOT_SLUG.sub("", slug)  # str.isalnum is the regex's \w, less "_"
    slug = slug.replace(" ", "-")
    return slug[:_MAX_SLUG].rstrip("-") or "section"


def kramdown_slug(title: str) -> str:
    """The id Jekyll's kramdown gives a heading (an alias for anchor links)."""
    slug = title.lower()
    if not (slug.isascii() and slug.replace(" ", "").replace("-", "").isalnum()):
        slug = _KRAMDOWN_DROP.sub("", slug)  # ASCII isalnum is [a-z0-9] once lowercased
    return slug.replace(" ", "-").lstrip("0123456789-")


class SlugRegistry:
    """Hands out unique slugs, deterministically, in the order asked."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._suffix: dict[str, int] = {}

    def unique(self, slug: str) -> str:
        if slug not in self._seen:
            self._seen.add(slug)
            return slug
        n = self._suffix.get(slug, 0)
        while True:
            n += 1
            candidate = f"{slug}-{n}"
            if candidate not in self._seen:
                break
        self._suffix[slug] = n
        self._seen.add(candidate)
        return candidate


def build_sections(
    text: str, blocks: list[Block], body_start: int, slugs: SlugRegistry
) -> list[Section]:
    """Sections in document order; ``blocks`` come from ``text[body_start:]``, in order.

    The preamble starts right at ``body_start`` so that nothing the parser keeps
    no token for (link reference definitions) falls outside every section.
    """
    body_end = len(text)
    sections: list[Section] = []
    stack: list[int] = []  # open sections, outermost first
    heads = [index for index, block in enumerate(blocks) if block.kind == "heading"]
    preamble = blocks[: heads[0]] if heads else blocks
    for position, head in enumerate(heads):
        block = blocks[head]
        own = blocks[head : heads[position + 1] if position + 1 < len(heads) else len(blocks)]
        if not sections and text[body_start : block.start].strip():
            sections.append(_preamble(preamble, body_start, block.start, slugs))
        while stack and sections[stack[-1]].level >= block.level:
            closed = sections[stack.pop()]
            closed.end = block.start
        if sections and sections[-1].own_end > block.start:
            sections[-1].own_end = block.start
        parent = stack[-1] if stack else None
        above = sections[parent].path if parent is not None else ()
        section = Section(
            index=len(sections),
            level=block.level,
            title=block.title,
            path=(*above, path_title(block.title)),
            start=block.start,
            own_end=body_end,
            end=body_end,
            blocks=own,
            parent=parent,
            slug=slugs.unique(github_slug(block.title)),
            anchors=[anchor for each in own if each.anchors for anchor in each.anchors],
        )
        if parent is not None:
            sections[parent].children.append(section.index)
        sections.append(section)
        stack.append(section.index)
    if not sections and text[body_start:].strip():
        sections.append(_preamble(preamble, body_start, body_end, slugs))
    return sections


def _preamble(blocks: list[Block], start: int, end: int, slugs: SlugRegistry) -> Section:
    return Section(
        index=0,
        level=0,
        title="",
        path=(),
        start=start,
        own_end=end,
        end=end,
        blocks=list(blocks),
        parent=None,
        slug=slugs.unique(PREAMBLE_SLUG),
        anchors=[anchor for block in blocks for anchor in block.anchors],
    )
