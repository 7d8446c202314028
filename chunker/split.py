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
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from chunker.blocks import Block
from chunker.policy import SizePolicy
from chunker.tokens import count_tokens

_TEXT_BOUNDARIES = (
    re.compile(r"\n[ \t]*\n\s*"),  # blank lines
    re.compile(r"\n"),  # line ends
    re.compile(r"[.!?…][\"'”’)\]]*\s+|[。！？]\s*"),  # sentence ends  # noqa: RUF001
    re.compile(r"\s+"),  # whitespace
)

Count = Callable[[int, int], int]


@dataclass(frozen=True, slots=True)
class Piece:
    start: int
    end: int
    tokens: int
    header: str | None = None  # table header rows to repeat if a part starts here
    unsplittable: bool = False


@dataclass(frozen=True, slots=True)
class Part:
    start: int
    end: int
    header: str | None
    unsplittable: bool


def split_unit(
    text: str, blocks: list[Block], span: tuple[int, int], policy: SizePolicy, count: Count
) -> list[Part]:
    """Parts covering ``span``, a unit of ``text`` whose blocks (in order) are ``blocks``."""
    splitter = _Splitter(text, policy, count)
    return list(_pack(splitter.pieces(blocks, *span), span[1], policy))


@dataclass(frozen=True, slots=True)
class _Splitter:
    text: str
    policy: SizePolicy
    count: Count

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
                yield from self._split_text(left, right, 0)

    def _by_cuts(self, cuts: list[int], header: str | None) -> Iterator[Piece]:
        for position, (left, right) in enumerate(itertools.pairwise(cuts)):
            row_header = header if position > 0 else None
            tokens = self.count(left, right)
            if tokens <= self.policy.max_tokens:
                yield Piece(left, right, tokens, row_header)
            else:
                for piece in self._split_text(left, right, 0):
                    yield Piece(
                        piece.start, piece.end, piece.tokens, row_header, piece.unsplittable
                    )

    def _split_text(self, start: int, end: int, level: int) -> Iterator[Piece]:
        if level == len(_TEXT_BOUNDARIES):
            yield Piece(start, end, self.count(start, end), unsplittable=True)
            return
        left = start
        for match in _TEXT_BOUNDARIES[level].finditer(self.text, start, end):
            right = match.end()
            if right >= end:
                break
            if right > left:
                yield from self._segment(left, right, level)
                left = right
        if left == start:  # no boundary of this kind: go finer without recounting
            yield from self._split_text(start, end, level + 1)
        else:
            yield from self._segment(left, end, level)

    def _segment(self, start: int, end: int, level: int) -> Iterator[Piece]:
        tokens = self.count(start, end)
        if tokens <= self.policy.max_tokens:
            yield Piece(start, end, tokens)
        else:
            yield from self._split_text(start, end, level + 1)


def _pack(pieces: Iterator[Piece], end: int, policy: SizePolicy) -> Iterator[Part]:
    header_tokens: dict[str, int] = {}
    start: int | None = None
    header: str | None = None
    unsplittable = False
    total = 0
    for piece in pieces:
        if start is not None and total + piece.tokens > policy.max_tokens:
            yield Part(start, piece.start, header, unsplittable)
            start = None
        if start is None:
            start, header, unsplittable, total = piece.start, None, piece.unsplittable, piece.tokens
            if piece.header is not None:
                if piece.header not in header_tokens:
                    header_tokens[piece.header] = count_tokens(piece.header)
                if total + header_tokens[piece.header] <= policy.max_tokens:
                    header = piece.header
                    total += header_tokens[piece.header]
        else:
            total += piece.tokens
    if start is not None:
        yield Part(start, end, header, unsplittable)
