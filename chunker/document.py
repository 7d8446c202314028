"""``chunk_document``: one document version in, its ordered chunks out.

The steps, each in its own module: read the content into blocks
(``markdown``/``html``), front matter into metadata (``metadata``), blocks
into a section tree (``sections``), small sections into units (``merge``),
big units into parts (``split``), then chunks with ids and links (here and
``links``). Every chunk's text is a span of the source (plus, for a part
that starts inside a table, the repeated header rows), so the chunks cover
the body exactly once, in order.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from chunker import links
from chunker.blocks import ParsedDocument
from chunker.html import html_to_text, parse_html
from chunker.inputs import check_changed_at, check_identity, content_kind, decode
from chunker.markdown import anchor_definitions, parse_markdown
from chunker.merge import plan_units
from chunker.metadata import merge_metadata, parse_front_matter
from chunker.model import Chunk, DocumentMetadata, Neighbours, build, chunk_id
from chunker.policy import SizePolicy
from chunker.scan import expand_regions, scan_markdown
from chunker.sections import Section, SlugRegistry, build_sections, path_title
from chunker.split import Part, split_unit
from chunker.tokens import SpanCounter, classes, count_tokens


def chunk_document(
    document_id: str,
    version: int,
    content: str | bytes,
    *,
    content_type: str = "text/markdown",
    metadata: Mapping[str, object] | None = None,
    changed_at: datetime | None = None,
    policy: SizePolicy = SizePolicy(),  # noqa: B008 - frozen, so a safe default
) -> list[Chunk]:
    """The chunks of one document version, in document order.

    Raises a ``ChunkerError`` subclass on bad input: ``InvalidContent``,
    ``InvalidFrontMatter`` or ``InvalidMetadata``. An empty document gives ``[]``.
    """
    check_identity(document_id, version)
    check_changed_at(changed_at)
    kind = content_kind(content_type)
    text, utf8 = decode(content)
    # the token counter first, from the UTF-8 copy that checking the text made; each
    # copy goes as soon as the next is made
    cls = classes(text, utf8)
    del utf8
    count = SpanCounter(text, cls)
    del cls
    parsed: ParsedDocument
    if kind == "text/markdown":
        parsed = scan_markdown(text) or parse_markdown(text)
    else:
        parsed = parse_html(text)
    front = parse_front_matter(parsed.front_matter) if parsed.front_matter is not None else {}
    if parsed.title and "title" not in front:
        front["title"] = parsed.title
    meta = merge_metadata(front, metadata, text=text, path=document_id)
    slugs = SlugRegistry()
    sections = build_sections(text, parsed.blocks, parsed.body_start, slugs)
    del parsed  # the sections hold the blocks now
    if not sections:
        return []
    if kind == "text/markdown":
        _add_anchors(text, sections)

    drafts: list[_Draft] = []
    first_chunk: dict[int, int] = {}  # section index -> index of the chunk where it starts
    for unit in plan_units(sections, policy, count):
        head = sections[unit.sections[0]]
        if unit.tokens <= policy.max_tokens:  # one chunk, the commonest case
            part = _trim(text, Part(unit.start, unit.end, None, False, unit.tokens), kind)
            if part is not None:
                drafts.append(_Draft(head, head.slug, part, 1, 1))
                for index in unit.sections:
                    first_chunk[index] = len(drafts) - 1
            continue
        blocks = expand_regions(
            text, [block for index in unit.sections for block in sections[index].blocks]
        )
        parts = split_unit(text, blocks, (unit.start, unit.end), policy, count)
        kept = [part for part in (_trim(text, part, kind) for part in parts) if part is not None]
        for number, part in enumerate(kept, start=1):
            slug = head.slug if number == 1 else slugs.unique(f"{head.slug}-part-{number}")
            drafts.append(_Draft(head, slug, part, number, len(kept)))
        for index in unit.sections if kept else ():
            first_chunk[index] = _chunk_at(drafts, len(kept), sections[index].start)
    del count  # the piece marks: not needed while the chunks are built
    for section in sections:
        section.blocks = []  # nor are the blocks, which cost more than a small text
    ids = [chunk_id(document_id, version, draft.slug) for draft in drafts]
    related = _related(text, sections, drafts, first_chunk)
    common = _Common(
        document_id, version, path_title(meta.title or document_id), meta, kind, changed_at
    )
    return [
        _chunk(text, draft, ids, related[ordinal], common, ordinal=ordinal)
        for ordinal, draft in enumerate(drafts)
    ]


_ASCII_SPACE = frozenset(" \t\n\r\f\v")


@dataclass(slots=True)  # not frozen, as Block: one a chunk, never changed
class _Draft:
    section: Section
    slug: str
    part: Part
    number: int  # 1-based part number
    parts: int


@dataclass(frozen=True, slots=True)
class _Common:
    """What every chunk of the document shares."""

    document_id: str
    version: int
    root: str  # first element of every heading path
    meta: DocumentMetadata
    content_type: str
    changed_at: datetime | None


def _chunk(
    text: str, draft: _Draft, ids: list[str], related: list[int], common: _Common, *, ordinal: int
) -> Chunk:
    part = draft.part
    body = text[part.start : part.end]
    html = common.content_type == "text/html"
    if html:
        body = html_to_text(body)
    chunk_text = f"{part.header}\n{body}" if part.header else body
    heading_path = [common.root, *draft.section.path]
    split = draft.parts > 1
    # every value is built here from checked input: validating again only costs time
    return build(
        Chunk,
        {
            "chunk_id": ids[ordinal],
            "document_id": common.document_id,
            "version": common.version,
            "section": draft.slug,
            "ordinal": ordinal,
            "heading_path": heading_path,
            "text": chunk_text,
            "char_start": part.start,
            "char_end": part.end,
            # whitespace is free and cuts fall on whitespace, so the parts' sums are exact
            "token_count": count_tokens(body) if html else part.tokens,
            "part": draft.number if split else None,
            "parts": draft.parts if split else None,
            "repeated_header": part.header,
            "unsplittable": part.unsplittable,
            "neighbours": build(
                Neighbours,
                {
                    "previous": ids[ordinal - 1] if ordinal else None,
                    "next": ids[ordinal + 1] if ordinal + 1 < len(ids) else None,
                    "related": [ids[i] for i in related],
                },
            ),
            "metadata": common.meta,
            "content_type": common.content_type,
            "changed_at": common.changed_at,
        },
    )


def _related(
    text: str, sections: list[Section], drafts: list[_Draft], first_chunk: dict[int, int]
) -> list[list[int]]:
    related: dict[int, set[int]] = {}  # only chunks with a link: most have none
    found = links.linked_anchors(text)  # links anywhere: each belongs to the chunk around it
    if found:
        targets = links.anchor_targets(sections)
        ends = [draft.part.end for draft in drafts]
        for offset, anchor in found:
            position = bisect.bisect_right(ends, offset)
            section = targets.get(anchor, targets.get(anchor.lower()))
            if position == len(drafts) or drafts[position].part.start > offset:
                continue  # in front matter, or in whitespace between chunks
            if section is not None and section in first_chunk:
                related.setdefault(position, set()).add(first_chunk[section])
    for rule, exception in links.exception_pairs(sections):
        a, b = first_chunk.get(rule), first_chunk.get(exception)
        if a is not None and b is not None:
            related.setdefault(a, set()).add(b)
            related.setdefault(b, set()).add(a)
    none: list[int] = []  # shared by the chunks without links; never changed
    return [
        sorted(related[position] - {position}) if position in related else none
        for position in range(len(drafts))
    ]


def _add_anchors(text: str, sections: list[Section]) -> None:
    """Give each section the explicit ids defined in its own text, below its heading
    (the heading's own come with its title)."""
    found = anchor_definitions(text, sections[0].start)
    if not found:
        return
    starts = [section.start for section in sections]  # own texts tile the body, in order
    for start, end, name in found:
        section = sections[bisect.bisect_right(starts, start) - 1]
        below = section.blocks[0].end if section.level else section.start
        if below <= start and end <= section.own_end:
            section.anchors.append(name)


def _chunk_at(drafts: list[_Draft], recent: int, offset: int) -> int:
    """Index of the chunk, among the last ``recent`` drafts, that holds ``offset``."""
    for index in range(len(drafts) - recent, len(drafts)):
        if drafts[index].part.end > offset:
            return index
    return len(drafts) - 1


def _trim(text: str, part: Part, kind: str) -> Part | None:
    """The part without surrounding whitespace (trimmed in place: parts are made
    afresh for each unit); None when nothing readable is left."""
    start, end = part.start, part.end
    if kind == "text/html" and not html_to_text(text[start:end]):
        return None
    # ASCII whitespace only: it is what token counts skip (see ``chunker.tokens``)
    while start < end and text[start] in _ASCII_SPACE:
        start += 1
    while end > start and text[end - 1] in _ASCII_SPACE:
        end -= 1
    if start == end:
        return None
    part.start, part.end = start, end
    return part
