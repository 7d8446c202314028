"""The numbers of a sentence, as values: what ``check_citations`` compares a claim with.

A claim's numbers (amounts, percentages, durations, counts, dates' parts) must be
in the clause it cites. They are compared as values, not as text:

- digits with thousands separators and decimals: ``1,000`` = ``1000``,
  ``20.00`` = ``20``; a currency sign or code around them does not matter
  (``$20``, ``20 EUR``); ``50%`` = ``50 percent`` = ``50 per cent``;
- number words from ``zero`` to ``nine hundred ninety-nine`` (``fourteen``,
  ``twenty-one``, ``twenty one``, ``one hundred``, ``a hundred and five``), and
  ``thousand``/``million`` after them;
- a duration is also compared in days: ``2 weeks`` matches ``14 days`` and
  ``fourteen days`` (days, weeks; months and years are left as they are, their
  length in days varies).

Digits glued to letters are not numbers here (``MT103``, ``v8``, ``4.2a``): codes,
not quantities. English words only; a claim in another language has its digits
compared, and its number words are not read (said in docs/citations.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}
TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}
SCALES = {"thousand": 1_000, "million": 1_000_000}
DAYS_PER = {"day": 1, "days": 1, "week": 7, "weeks": 7, "fortnight": 14, "fortnights": 14}

_DIGITS = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w]|[.,]\d)")
_WORD = re.compile(r"[a-z]+")
_UNIT_AFTER = re.compile(r"\s*(?:-\s*)?(%|[a-z]+)")


@dataclass(frozen=True)
class Number:
    """One number as written (``text``), its value, and its length in days if a duration."""

    text: str
    value: Decimal
    days: Decimal | None = None

    def matches(self, other: Number) -> bool:
        if self.value == other.value:
            return True
        return self.days is not None and self.days == other.days


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", "")).normalize()
    except InvalidOperation:
        return None


def _days(value: Decimal, rest: str) -> Decimal | None:
    unit = _UNIT_AFTER.match(rest)
    if unit is None:
        return None
    per = DAYS_PER.get(unit.group(1))
    return value * per if per is not None else None


def _word_numbers(text: str) -> list[tuple[int, int, Decimal]]:
    """(start, end, value) of each run of number words (``twenty one``, ``a hundred and five``)."""
    found: list[tuple[int, int, Decimal]] = []
    words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
    i = 0
    while i < len(words):
        start, end, word = words[i]
        if word not in UNITS and word not in TENS and not (
            word == "a" and i + 1 < len(words) and words[i + 1][2] in ("hundred", "thousand")
        ):
            i += 1
            continue
        total, current, j, last_end = 0, 0, i, end
        seen = False
        while j < len(words):
            _, w_end, w = words[j]
            gap = text[last_end:words[j][0]] if j > i else ""
            if j > i and gap.strip(" \t") not in ("", "-"):
                break
            if w in UNITS:
                current += UNITS[w]
            elif w in TENS:
                current += TENS[w]
            elif w == "a" and j == i:
                current += 1
            elif w == "hundred" and seen:
                current = max(current, 1) * 100
            elif w == "and" and words[j - 1][2] in ("hundred", *SCALES) and j + 1 < len(
                    words) and (words[j + 1][2] in UNITS or words[j + 1][2] in TENS):
                pass
            elif w in SCALES and seen:
                total += max(current, 1) * SCALES[w]
                current = 0
            else:
                break
            seen = True
            last_end = w_end
            j += 1
        if seen:
            found.append((start, last_end, Decimal(total + current)))
        i = max(j, i + 1)
    return found


def numbers_in(text: str) -> list[Number]:
    """Every number of ``text``, in order (digits and English number words)."""
    lowered = text.lower()
    found: list[tuple[int, Number]] = []
    for match in _DIGITS.finditer(lowered):
        value = _decimal(match.group(1) + (match.group(2) or ""))
        if value is None:
            continue
        found.append((match.start(), Number(match.group(), value,
                                            _days(value, lowered[match.end():]))))
    for start, end, value in _word_numbers(lowered):
        found.append((start, Number(lowered[start:end], value, _days(value, lowered[end:]))))
    return [n for _, n in sorted(found, key=lambda item: item[0])]


def missing_numbers(claim: str, clause: str) -> list[Number]:
    """The numbers of ``claim`` that no number of ``clause`` matches (as values)."""
    have = numbers_in(clause)
    return [n for n in numbers_in(claim) if not any(n.matches(h) for h in have)]
