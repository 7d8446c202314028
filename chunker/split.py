"""Splitting: a unit above ``max_tokens`` becomes parts cut at block boundaries.

Pieces are cut, from the coarsest to the finest boundary, only as far as
needed: between top-level blocks; between list items and table rows (a part
that starts inside a table repeats the table's header rows); then, inside a
single block that is too big on its own, at blank lines, line ends, sentence
ends and finally whitespace. A run of text with no whitespace that is still
above the maximum is kept whole, alone in its part, and flagged
``unsplittable``. Pieces are then packed greedily, in order, up to the maximum.
Every piece is a span of the source, and consecutive pieces touch, so the
parts cover the unit exactly.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from chunker.blocks import Block
from chunker.policy import SizePolicy
from chunker.tokens import SpanCounter, count_tokens

# Cuts fall after ASCII whitespace (or after a CJK full stop, where the character
# class changes), where token counts add up: see ``chunker.tokens``.
_LINE_END = re.compile(r"\n")
_WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")
_TEXT_BOUNDARIES = (
    re.compile(r"\n[ \t]*\n[ \t\n\r\f\v]*"),  # blank lines
    _LINE_END,
    re.compile(  # sentence ends
        r"[.!?…][\"'”’)\]]*[ \t\n\r\f\v]+|[。！？](?![^\w\s])[ \t\n\r\f\v]*"  # noqa: RUF001
    ),
    _WHITESPACE,
)
_SPACE = re.compile(r"[ \t\n\r\f\v]")


@dataclass(slots=True)  # not frozen, as Block: built by the thousand, never changed
class Piece:
    start: int
    end: int
    tokens: int
    header: str | None = None  # table header rows to repeat if a part starts here
    unsplittable: bool = False


@dataclass(slots=True)  # not frozen, as Block
class Part:
    start: int
    end: int
    header: str | None
    unsplittable: bool
    tokens: int  # of the span plus the header: counts are additive at whitespace


def split_unit(
    text: str, blocks: list[Block], span: tuple[int, int], policy: SizePolicy, count: SpanCounter
) -> list[Part]:
    """Parts covering ``span``, a unit of ``text`` whose blocks (in order) are ``blocks``.

    The fewest parts that fit, as even as the pieces allow: greedy packing up to
    the maximum gives the fewest parts; the smallest limit that still gives that
    many (binary search) evens them out, so that a 900-token section becomes two
    parts of about 450 rather than 800 and 100.
    """
    pieces = list(_Splitter(text, policy, count).pieces(blocks, *span))
    header_tokens = {p.header: count_tokens(p.header) for p in pieces if p.header is not None}
    fewest = len(_pack(pieces, policy.max_tokens, header_tokens))
    tokens = [piece.tokens for piece in pieces]
    extras = [0 if piece.header is None else header_tokens[piece.header] for piece in pieces]
    low = max(1, -(-sum(tokens) // max(1, fewest)))
    high = policy.max_tokens
    while low < high:  # the smallest limit that packs into `fewest` parts
        middle = (low + high) // 2
        if _fits(tokens, extras, middle, fewest):
            high = middle
        else:
            low = middle + 1
    return [
        Part(p.start, p.end, p.header, p.unsplittable, p.tokens)
        for p in _pack(pieces, high, header_tokens)
    ]


@dataclass(frozen=True, slots=True)
class _Splitter:
    text: str
    policy: SizePolicy
    count: SpanCounter

    def pieces(self, blocks: list[Block], start: int, end: int) -> Iterator[Piece]:
        cuts = [start] + [b.start for b in blocks if start < b.start < end] + [end]
        inside = {b.start: b for b in blocks}
        for left, right in itertools.pairwise(cuts):
            tokens = self.count(left, right)
            block = inside.get(left)
            if tokens <= self.policy.max_tokens:
                yield Piece(left, right, tokens)
            elif block is not None and block.kind == "table":
                header = self.text[block.start : block.header_end].rstrip("\r\n")
                yield from self._by_cuts([left, *block.splits, right], header)
            elif block is not None and block.splits:
                yield from self._by_cuts([left, *block.splits, right], None)
            else:
                yield from self._split_text(left, right)

    def _by_cuts(self, cuts: list[int], header: str | None) -> Iterator[Piece]:
        for position, (left, right) in enumerate(itertools.pairwise(cuts)):
            row_header = header if position > 0 else None
            tokens = self.count(left, right)
            if tokens <= self.policy.max_tokens:
                yield Piece(left, right, tokens, row_header)
            else:
                for piece in self._split_text(left, right):
                    yield Piece(
                        piece.start, piece.end, piece.tokens, row_header, piece.unsplittable
                    )

    def _split_text(self, start: int, end: int) -> Iterator[Piece]:
        """Cut one block that is too big alone into pieces of at most ``max_tokens``.

        Walk forward: find where the budget runs out (the start of the token
        after the ``max_tokens``-th), then cut at the coarsest boundary that
        lies in the second half of that window (blank line, line end, sentence
        end, whitespace), or at the coarsest one anywhere in it. Each step
        looks at one window only, so the work is linear in the block's size.
        """
        budget = self.policy.max_tokens
        position = start
        while position < end:
            limit = self.count.budget_end(position, end, budget)  # where the budget runs out
            if limit is None:
                yield Piece(position, end, self.count(position, end))
                return
            cut = _best_cut(self.text, position, limit)
            if cut is None:  # one run with no whitespace: keep it whole, flagged
                space = _SPACE.search(self.text, limit, end)
                cut = space.start() if space else end
                yield Piece(position, cut, self.count(position, cut), unsplittable=True)
            else:
                yield Piece(position, cut, self.count(position, cut))
            position = cut


def _best_cut(text: str, start: int, limit: int) -> int | None:
    """Cut offset in ``(start, limit]``: coarsest boundary kind, late in the window first."""
    middle = start + (limit - start) // 2
    fallback: int | None = None
    for boundary in _TEXT_BOUNDARIES:
        last = _last_end(text, boundary, start, limit)
        if last is not None:
            if last >= middle:
                return last
            fallback = last if fallback is None else fallback
    return fallback


def _last_end(text: str, boundary: re.Pattern[str], start: int, limit: int) -> int | None:
    """End of the last match of ``boundary`` in ``text[start:limit]`` (cut at ``limit``)."""
    if boundary is _LINE_END:  # the last "\n": found from the end, at memchr speed
        found = text.rfind("\n", start, limit)
        return found + 1 if found >= 0 else None
    if boundary is _WHITESPACE:  # a run's end is one past its last character
        found = max(text.rfind(char, start, limit) for char in " \t\n\r\f\v")
        return found + 1 if found >= 0 else None
    last = None
    for match in boundary.finditer(text, start, limit):
        last = match.end()
    return last if last is not None and last > start else None


def _fits(tokens: list[int], extras: list[int], limit: int, most: int) -> bool:
    """Whether ``_pack`` up to ``limit`` makes at most ``most`` parts, on the pieces'
    token counts alone (``extras``: a piece's header tokens, when it has one)."""
    closed, open_tokens = 0, -1  # -1: no part open yet
    for piece_tokens, extra in zip(tokens, extras, strict=True):
        if open_tokens >= 0 and open_tokens + piece_tokens <= limit:
            open_tokens += piece_tokens
            continue
        if open_tokens >= 0:
            closed += 1
            if closed >= most:  # this part and the one starting here make too many
                return False
        with_header = piece_tokens + extra
        open_tokens = with_header if extra and with_header <= limit else piece_tokens
    return True


def _pack(pieces: list[Piece], limit: int, header_tokens: dict[str, int]) -> list[Piece]:
    """Greedy packing, in order, up to ``limit`` tokens a part.

    Each part is given as a piece standing for it (its start, repeated header,
    flag and total tokens). A part that starts inside a table carries the
    header rows when they fit within ``limit``.
    """
    parts: list[Piece] = []
    head: Piece | None = None  # the open part's first piece: only closed parts become Pieces
    tokens, header = 0, None
    for index, piece in enumerate(pieces):
        if head is not None and tokens + piece.tokens > limit:
            parts.append(_part(head, pieces[index - 1], tokens, header))
            head = None
        if head is None:
            head, tokens, header = piece, piece.tokens, piece.header
            if header is not None and tokens + header_tokens[header] <= limit:
                tokens += header_tokens[header]
            else:
                header = None
        else:
            tokens += piece.tokens
    if head is not None:
        parts.append(_part(head, pieces[-1], tokens, header))
    return parts


def _part(head: Piece, last: Piece, tokens: int, header: str | None) -> Piece:
    """A part from ``head`` to ``last``, standing for the pieces between."""
    return Piece(head.start, last.end, tokens, header, head.unsplittable)
