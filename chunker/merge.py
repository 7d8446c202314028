"""Grouping: a small section absorbs its own small subsections.

A section whose own text is under ``min_tokens`` takes in its subsections,
in order, while each is small (under ``min_tokens``) and has itself been
merged whole, and while the total stays within ``max_tokens``; it stops
once it reaches ``min_tokens``. Only a section's own descendants are ever
merged into it, so sections under different parents never share a chunk,
and a merged unit is always one contiguous span of the source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chunker.policy import SizePolicy
from chunker.sections import Section


@dataclass(slots=True)
class Unit:
    """One or more sections that become one chunk, or several parts if too big."""

    sections: list[int]  # the first one names the unit
    start: int
    end: int
    tokens: int
    whole: bool  # True when it holds its first section and all of its subsections


def plan_units(
    sections: list[Section], policy: SizePolicy, count: Callable[[int, int], int]
) -> list[Unit]:
    """Units in document order; ``count(start, end)`` counts tokens of a source span."""
    units: list[Unit] = []
    for section in sections:
        if section.parent is None:
            units.extend(_plan(section.index, sections, policy, count))
    return units


def _plan(
    index: int, sections: list[Section], policy: SizePolicy, count: Callable[[int, int], int]
) -> list[Unit]:
    section = sections[index]
    own = Unit([index], section.start, section.own_end, count(section.start, section.own_end), True)
    if not section.children:
        return [own]
    rest: list[Unit] = []
    absorbing = own.tokens < policy.min_tokens
    for child in section.children:
        child_units = _plan(child, sections, policy, count)
        if absorbing:
            unit = child_units[0]
            if (
                len(child_units) == 1
                and unit.whole
                and unit.tokens < policy.min_tokens
                and own.tokens + unit.tokens <= policy.max_tokens
            ):
                own.sections.extend(unit.sections)
                own.end = unit.end
                own.tokens += unit.tokens
                absorbing = own.tokens < policy.min_tokens
                continue
            absorbing = False
        own.whole = False
        rest.extend(child_units)
    return [own, *rest]
