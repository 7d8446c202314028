"""Rich text of the CMSs as the Markdown the chunker reads, headings kept.

The chunker cuts a document at its headings (``chunker/sections.py``), so a
rich-text heading must come out as an ATX heading (``## Eligibility``) at its
level; everything else keeps its meaning in plain Markdown: paragraphs,
bold/italic/code marks, links, bullet and numbered lists (nested by
indentation), quotes, rules, tables, code blocks. Embedded entries or assets
have no text of their own here and are left out.

- ``contentful_to_markdown``: Contentful's rich-text JSON (``nodeType``
  ``document`` with ``heading-1`` ... ``heading-6``, ``paragraph``, lists,
  ``blockquote``, ``hr``, ``table``, ``hyperlink``; ``marks`` on ``text``).
- ``portable_text_to_markdown``: Sanity's Portable Text (a list of ``block``
  objects with ``style`` h1..h6/normal/blockquote, ``listItem`` and ``level``,
  ``children`` spans with ``marks`` that name decorators or ``markDefs``
  such as links; a ``code`` object from the code-input plugin).

Unknown node types keep their text (a new CMS node type degrades to plain
text rather than losing words); a value that is not the expected shape raises
``RichTextError`` naming the path of the bad node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class RichTextError(ValueError):
    """The rich text is not of the CMS's shape; the message names the node's path."""


_CF_MARKS = {"bold": "**", "italic": "_", "code": "`", "underline": "", "superscript": "",
             "subscript": "", "strikethrough": "~~"}


def contentful_to_markdown(document: Mapping[str, Any]) -> str:
    if not isinstance(document, Mapping) or document.get("nodeType") != "document":
        raise RichTextError("contentful rich text: the root is not {'nodeType': 'document'}")
    blocks = [_cf_block(node, f"content[{i}]", 0)
              for i, node in enumerate(_children(document, "content", "document"))]
    return _join(blocks)


def _children(node: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = node.get(key, [])
    if not isinstance(value, list):
        raise RichTextError(f"rich text: {where}.{key} is {type(value).__name__}, not a list")
    return value


def _cf_block(node: Any, where: str, depth: int) -> str:
    if not isinstance(node, Mapping) or not isinstance(node.get("nodeType"), str):
        raise RichTextError(f"contentful rich text: {where} has no nodeType")
    kind: str = node["nodeType"]
    content = _children(node, "content", where)
    if kind.startswith("heading-") and kind[-1:].isdigit():
        return "#" * int(kind[-1]) + " " + _cf_inline(content, where).strip()
    if kind in ("unordered-list", "ordered-list"):
        lines = []
        for number, item in enumerate(content, start=1):
            bullet = f"{number}." if kind == "ordered-list" else "-"
            lines.append(_list_item(bullet, [
                _cf_block(child, f"{where}.content[{number - 1}]", depth + 1)
                for child in _children(item, "content", where)], depth))
        return "\n".join(lines)
    if kind == "blockquote":
        inner = _join([_cf_block(c, f"{where}.content[{i}]", depth)
                       for i, c in enumerate(content)]).rstrip("\n")
        return "\n".join("> " + line if line else ">" for line in inner.split("\n"))
    if kind == "hr":
        return "---"
    if kind == "table":
        rows = [[_cf_inline(_children(cell, "content", where), where).strip().replace("|", "\\|")
                 for cell in _children(row, "content", where)] for row in content]
        return _table(rows)
    if kind.startswith("embedded-"):
        return ""
    # paragraph, list-item, table cells, and unknown node types (their words are kept)
    return _cf_inline_or_blocks(content, where, depth)


def _cf_inline_or_blocks(content: list[Any], where: str, depth: int) -> str:
    if all(isinstance(c, Mapping) and c.get("nodeType") in _CF_INLINE for c in content):
        return _cf_inline(content, where).strip()
    return _join([_cf_block(c, f"{where}.content[{i}]", depth) for i, c in enumerate(content)])


_CF_INLINE = {"text", "hyperlink", "entry-hyperlink", "asset-hyperlink", "resource-hyperlink",
              "embedded-entry-inline", "embedded-resource-inline"}


def _cf_inline(content: list[Any], where: str) -> str:
    parts = []
    for i, node in enumerate(content):
        if not isinstance(node, Mapping):
            raise RichTextError(f"contentful rich text: {where}.content[{i}] is not an object")
        kind = node.get("nodeType")
        if kind == "text":
            value = node.get("value", "")
            if not isinstance(value, str):
                raise RichTextError(f"contentful rich text: {where}.content[{i}].value "
                                    "is not a string")
            marks = [m.get("type") for m in node.get("marks", []) if isinstance(m, Mapping)]
            parts.append(_marked(value, [_CF_MARKS.get(str(m), "") for m in marks]))
        elif kind == "hyperlink":
            uri = node.get("data", {}).get("uri", "")
            parts.append(f"[{_cf_inline(_children(node, 'content', where), where)}]({uri})")
        elif kind == "embedded-entry-inline":
            continue
        else:
            parts.append(_cf_inline(_children(node, "content", where), where))
    return "".join(parts)


def _marked(text: str, wrappers: Sequence[str]) -> str:
    """``**bold**`` around the words only: Markdown ignores ``** bold**``."""
    core = text.strip()
    if not core:
        return text
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()):]
    for wrapper in wrappers:
        core = f"{wrapper}{core}{wrapper}"
    return lead + core + trail


def _list_item(bullet: str, blocks: list[str], depth: int) -> str:
    indent = "   " * depth if bullet[0].isdigit() else "  " * depth
    pad = " " * (len(bullet) + 1)
    text = _join(blocks).rstrip("\n").split("\n")
    first, rest = text[0], text[1:]
    return "\n".join([f"{indent}{bullet} {first}"] + [f"{indent}{pad}{line}" if line else ""
                                                       for line in rest])


def _table(rows: list[list[str]]) -> str:
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def _join(blocks: Sequence[str]) -> str:
    return "\n\n".join(b for b in blocks if b.strip()) + ("\n" if blocks else "")


# Sanity Portable Text ---------------------------------------------------

_PT_DECORATORS = {"strong": "**", "em": "_", "code": "`", "strike-through": "~~",
                  "underline": ""}


def portable_text_to_markdown(blocks: Sequence[Any]) -> str:
    if not isinstance(blocks, list):
        raise RichTextError("portable text: the value is not a list of blocks")
    out: list[str] = []
    counters: dict[int, int] = {}
    previous_list = False
    for i, block in enumerate(blocks):
        if not isinstance(block, Mapping) or not isinstance(block.get("_type"), str):
            raise RichTextError(f"portable text: [{i}] has no _type")
        if block["_type"] == "code" and isinstance(block.get("code"), str):
            language = block.get("language") or ""
            out.append(f"```{language}\n{block['code'].rstrip()}\n```")
            previous_list = False
            continue
        if block["_type"] != "block":
            continue  # images, embeds: no text of their own
        text = _pt_spans(block, f"[{i}]").strip()
        style = block.get("style", "normal")
        list_item = block.get("listItem")
        if list_item:
            level = block.get("level", 1)
            if not isinstance(level, int) or level < 1:
                raise RichTextError(f"portable text: [{i}].level={level!r} is not an integer ≥ 1")
            counters = {d: n for d, n in counters.items() if d <= level}
            counters[level] = counters.get(level, 0) + 1 if previous_list else 1
            bullet = f"{counters[level]}." if list_item == "number" else "-"
            item = "   " * (level - 1) + f"{bullet} {text}"
            if previous_list:
                out[-1] += "\n" + item
            else:
                out.append(item)
            previous_list = True
            continue
        previous_list = False
        counters = {}
        if isinstance(style, str) and len(style) == 2 and style[0] == "h" and style[1] in "123456":
            out.append("#" * int(style[1]) + " " + text)
        elif style == "blockquote":
            out.append("\n".join("> " + line for line in text.split("\n")))
        elif text:
            out.append(text)
    return _join(out)


def _pt_spans(block: Mapping[str, Any], where: str) -> str:
    defs = {d.get("_key"): d for d in block.get("markDefs", []) or [] if isinstance(d, Mapping)}
    parts = []
    for j, span in enumerate(_children(block, "children", where)):
        if not isinstance(span, Mapping):
            raise RichTextError(f"portable text: {where}.children[{j}] is not an object")
        if span.get("_type") != "span":
            continue
        text = span.get("text", "")
        if not isinstance(text, str):
            raise RichTextError(f"portable text: {where}.children[{j}].text is not a string")
        marks = [m for m in span.get("marks", []) or [] if isinstance(m, str)]
        text = _marked(text, [_PT_DECORATORS[m] for m in marks if m in _PT_DECORATORS])
        for mark in marks:
            link = defs.get(mark)
            if link is not None and link.get("_type") == "link" and link.get("href"):
                text = f"[{text}]({link['href']})"
        parts.append(text)
    return "".join(parts)


# Strapi 5 blocks editor ---------------------------------------------------

_STRAPI_MARKS = (("code", "`"), ("bold", "**"), ("italic", "_"), ("strikethrough", "~~"))


def strapi_blocks_to_markdown(blocks: Sequence[Any]) -> str:
    """Strapi's "Rich text (Blocks)" JSON: paragraph, heading, list, quote, code, image."""
    if not isinstance(blocks, list):
        raise RichTextError("strapi blocks: the value is not a list of blocks")
    return _join([_strapi_block(b, f"[{i}]", 0) for i, b in enumerate(blocks)])


def _strapi_block(node: Any, where: str, depth: int) -> str:
    if not isinstance(node, Mapping) or not isinstance(node.get("type"), str):
        raise RichTextError(f"strapi blocks: {where} has no type")
    kind = node["type"]
    children = _children(node, "children", where)
    if kind == "heading":
        level = node.get("level", 1)
        if not isinstance(level, int) or not 1 <= level <= 6:
            raise RichTextError(f"strapi blocks: {where}.level={level!r} is not 1..6")
        return "#" * level + " " + _strapi_inline(children, where).strip()
    if kind == "list":
        lines = []
        for number, item in enumerate(children, start=1):
            bullet = f"{number}." if node.get("format") == "ordered" else "-"
            inner = _children(item, "children", where) if isinstance(item, Mapping) else []
            nested = [c for c in inner if isinstance(c, Mapping) and c.get("type") == "list"]
            text = _strapi_inline([c for c in inner if c not in nested], where).strip()
            lines.append(_list_item(bullet, [text] + [
                _strapi_block(n, f"{where}.children[{number - 1}]", depth + 1)
                for n in nested], depth))
        return "\n".join(lines)
    if kind == "quote":
        text = _strapi_inline(children, where).strip()
        return "\n".join("> " + line for line in text.split("\n"))
    if kind == "code":
        language = node.get("language") or ""
        return f"```{language}\n{_strapi_inline(children, where).rstrip()}\n```"
    if kind == "image":
        return ""
    return _strapi_inline(children, where).strip()  # paragraph, and unknown: keep its words


def _strapi_inline(children: list[Any], where: str) -> str:
    parts = []
    for j, node in enumerate(children):
        if not isinstance(node, Mapping):
            raise RichTextError(f"strapi blocks: {where}.children[{j}] is not an object")
        if node.get("type") == "text":
            text = node.get("text", "")
            if not isinstance(text, str):
                raise RichTextError(f"strapi blocks: {where}.children[{j}].text is not a string")
            parts.append(_marked(text, [m for key, m in _STRAPI_MARKS if node.get(key)]))
        elif node.get("type") == "link":
            inner = _strapi_inline(_children(node, "children", where), where)
            parts.append(f"[{inner}]({node.get('url', '')})")
        else:
            parts.append(_strapi_inline(_children(node, "children", where), where))
    return "".join(parts)
