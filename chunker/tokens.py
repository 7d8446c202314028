"""An offline token count that approximates OpenAI's ``cl100k_base``.

The chunker counts tokens for every section of every document it sees, must
stay pure (no tokenizer files to download) and fast. It counts the pieces
that ``cl100k_base`` mostly turns into one token each: a run of up to six
ASCII letters, one CJK character (Han, kana, Hangul), up to two other
letters (accented Latin, Cyrillic, Greek...), up to three digits, up to two
punctuation marks. Whitespace counts for nothing, so the count is additive:
``count(a + " " + b) == count(a) + count(b)``, which lets the chunker count
each character once and add up.

Measured against ``cl100k_base`` on every section of the HEAD documents of
both corpora (``bench/bench_chunker.py --tokens``; figures in
``docs/chunking.md``): the total is within a few percent, a single section
is off by about 13% on average.
"""

from __future__ import annotations

import itertools
import re

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
PIECE = re.compile(rf"[A-Za-z]{{1,6}}|[{_CJK}]|[^\W\d_A-Za-z]{{1,2}}|\d{{1,3}}|[^\w\s]{{1,2}}")
# Above this size the text is counted in windows cut where no piece is cut,
# so that no list of millions of matches is ever held at once.
_WINDOW = 1 << 16


def count_tokens(text: str) -> int:
    """Approximate ``cl100k_base`` token count of ``text`` (whitespace is free)."""
    size = len(text)
    if size <= _WINDOW:
        return len(PIECE.findall(text))
    total = 0
    start = 0
    while start < size:
        end = min(start + _WINDOW, size)
        if end < size:
            end = _boundary(text, start, end)
        total += len(PIECE.findall(text, start, end))
        start = end
    return total


def _boundary(text: str, start: int, end: int) -> int:
    """A cut in ``(start, end]`` that no piece straddles, so windows add up exactly."""
    space = max(text.rfind(" ", start, end), text.rfind("\n", start, end))
    if space > start:
        return space
    last = None
    for last in PIECE.finditer(text, start, end):  # noqa: B007 - only the last one is wanted
        pass
    return last.start() if last is not None and last.start() > start else end


class SpanCounter:
    """Token counts of spans of one text, counting each character once.

    The text is counted once between consecutive ``cuts`` (offsets at
    whitespace, such as line starts); a span between two cuts is then a
    difference of prefix sums. Any other span is counted directly.
    """

    def __init__(self, text: str, cuts: list[int]) -> None:
        self._text = text
        points = sorted({0, len(text), *cuts})
        self._index = {point: i for i, point in enumerate(points)}
        self._prefix = [0]
        for left, right in itertools.pairwise(points):
            self._prefix.append(self._prefix[-1] + count_tokens(text[left:right]))

    def __call__(self, start: int, end: int) -> int:
        i, j = self._index.get(start), self._index.get(end)
        if i is not None and j is not None:
            return self._prefix[j] - self._prefix[i]
        return count_tokens(self._text[start:end])
