"""Related sections: anchor links inside the document, and rules with their exceptions.

- A chunk that links to ``#anchor`` (Markdown ``[..](#anchor)`` or HTML
  ``href="#anchor"``) is related to the chunk where that section starts.
  Anchors resolve to heading slugs (GitHub's and kramdown's rules) and to
  explicit ids (``<a id=..>``, ``{#id}``) in the section that defines them.
- A section whose heading says exception, exclusion, limitation (and the
  like, in the corpora's languages) is linked both ways with its rule: the
  nearest preceding sibling section, or its parent when it has none.
"""

from __future__ import annotations

import bisect
import itertools
import re
from urllib.parse import unquote

from chunker.sections import Section, kramdown_slug

# Every repetition is bounded (or stops at a character the next part needs),
# so that no input makes a search quadratic. Each pattern starts with a
# literal, which the regex engine finds at memchr speed.
_BRACKET_LINK = re.compile(  # [text](#anchor), or [label]: #anchor (group 2)
    r"""\](?:\([ \t]{0,8}<?#([^)\s>]{1,200})|:[ \t]{0,8}#(\S{1,200}))"""
)
_HREF_LINK = re.compile(r"""href[ \t]{0,8}=[ \t]{0,8}["']#([^"'\s]{1,200})["']""")  # <a href="#x">
_DEFINITION_LABEL = re.compile(r"[ \t]{0,3}\[[^\]\n]{1,200}")
# Matched against the lowercased title (an IGNORECASE search costs twice as much):
# Turkish capitals lowercase to dotted forms, so "İ" (i + U+0307) and "I" (i) match
# the dotless "ı" too.  # noqa: RUF003
EXCEPTION_WORDS = re.compile(
    r"\b(?:exceptions?|exclusions?|excluded|exemptions?|limitations?|carve[- ]outs?|"
    r"does not apply|not covered|unless|ausnahmen?|haftungsbeschränkung|einschränkungen?|"
    r"excepci[oó]n(?:es)?|exclusi[oó]n(?:es)?|limitaci[oó]n(?:es)?|eccezion[ei]|esclusion[ei]|"
    r"limitazion[ei]|exceç(?:ão|ões)|limitaç(?:ão|ões)|"
    r"i\u0307?st[iı]\u0307?sna(?:lar)?|s[ıi]\u0307?n[ıi]\u0307?rlama(?:lar)?|"  # noqa: RUF001
    r"wyjątk[iu]|ograniczeni[ae]|исключени[яе]|ограничени[яе])\b"
)


def anchor_targets(sections: list[Section]) -> dict[str, int]:
    """Anchor name to the index of the section it points at (first one wins)."""
    targets: dict[str, int] = {}
    for section in sections:
        names = [section.slug]
        if section.level:
            names.append(kramdown_slug(section.title))
        names.extend(section.anchors)
        for name in names:
            if name:
                targets.setdefault(name, section.index)
                targets.setdefault(name.lower(), section.index)
    return targets


def linked_anchors(text: str) -> list[tuple[int, str]]:
    """Anchor names that ``text`` links to, each with the offset of its link (unordered)."""
    if "#" not in text:
        return []
    found: list[tuple[int, str]] = []
    for match in _BRACKET_LINK.finditer(text):
        inline, defined = match.groups()
        if inline is not None:
            found.append((match.start(), unquote(inline)))
        elif _is_definition(text, match.start()):
            found.append((match.start(), unquote(defined)))
    found.extend((match.start(), unquote(match[1])) for match in _HREF_LINK.finditer(text))
    return found


def _is_definition(text: str, colon: int) -> bool:
    """Whether the ``]:`` at ``colon`` ends the label of a link reference definition."""
    line_start = text.rfind("\n", 0, colon) + 1
    label = _DEFINITION_LABEL.fullmatch(text, line_start, colon)
    return label is not None


def is_exception(title: str) -> bool:
    """Whether a heading says exception, exclusion, limitation and the like."""
    return bool(exception_titles([title]))


def exception_pairs(sections: list[Section]) -> list[tuple[int, int]]:
    """(rule, exception) section pairs: an exception qualifies its nearest preceding
    sibling that is not itself an exception, else its parent."""
    exceptions = exception_titles([section.title for section in sections])
    if not exceptions:
        return []
    top = [s.index for s in sections if s.parent is None and s.level]
    pairs: list[tuple[int, int]] = []
    for group, parent in [(top, None)] + [(s.children, s.index) for s in sections]:
        rule = parent
        for index in group:
            if index in exceptions:
                if rule is not None:
                    pairs.append((rule, index))
            else:
                rule = index
    return pairs


def exception_titles(titles: list[str]) -> set[int]:
    """Positions of the titles that say exception (``EXCEPTION_WORDS``), found by one
    search over all of them lowercased, NUL-separated (no title holds one)."""
    lowered = [title.lower() for title in titles]
    starts = list(itertools.accumulate((len(title) + 1 for title in lowered), initial=0))
    found = EXCEPTION_WORDS.finditer("\0".join(lowered))
    return {bisect.bisect_right(starts, match.start()) - 1 for match in found}
