"""An offline token count that approximates OpenAI's ``cl100k_base``.

The chunker counts tokens for every section of every document it sees, must
stay pure (no tokenizer files to download) and fast. It counts the pieces
that ``cl100k_base`` mostly turns into one token each: a run of up to six
ASCII letters, up to three ASCII digits, up to two ASCII punctuation marks,
up to two letters of an alphabet written with two UTF-8 bytes (accented
Latin, Greek, Cyrillic, Hebrew, Arabic...), and one character of anything
written with three or four bytes (Han, kana, Hangul, Indic scripts, curly
quotes, emoji). ASCII whitespace and ``_`` count for nothing (a no-break
space counts as a two-byte character), so the count is additive:
``count(a + " " + b) == count(a) + count(b)``, which lets the chunker count
each character once and add up; it cuts only after ASCII whitespace or
between characters of different classes.

How it runs at C speed: the text becomes a *class string*, one byte per
character (``a`` letter, ``0`` digit, ``.`` punctuation, ``l`` two-byte
letter, ``c`` wide character, space for whitespace), by one UTF-8 encode and
one ``bytes.translate`` that also drops continuation bytes. A run of ``L``
characters of a class cut every ``k`` is ``ceil(L / k)`` pieces: mark the
class as ``1`` and the rest ``0``, pad each run with ``k - 1`` ones, and count
the non-overlapping ``k``-long runs of ones. No per-character Python code
runs, and the only copies are of the class string.

Measured against ``cl100k_base`` on every chunk of the HEAD documents of both
corpora (``bench/bench_chunker.py --tokens``; figures in ``docs/chunking.md``).
"""

from __future__ import annotations

import re

_LETTER, _DIGIT, _PUNCT, _NARROW, _WIDE, _SPACE = b"a", b"0", b".", b"l", b"c", b" "
# (class, characters per piece); wide characters are one piece each, counted directly
_RUN_CLASSES = ((_LETTER, 6), (_DIGIT, 3), (_PUNCT, 2), (_NARROW, 2))


def _class_of_byte(byte: int) -> bytes:
    char = chr(byte)
    if byte < 0x80:
        if char.isspace() or char == "_":
            return _SPACE
        if char.isascii() and char.isalpha():
            return _LETTER
        return _DIGIT if char.isdigit() else _PUNCT
    return _NARROW if byte < 0xE0 else _WIDE  # lead bytes; continuation bytes are dropped


_TABLE = b"".join(_class_of_byte(byte) for byte in range(256))
_CONTINUATION = bytes(range(0x80, 0xC0))
# per class: a translate table that keeps the class as "1" and turns the rest to "0"
_ONLY = {
    cls: bytes(0x31 if byte == cls[0] else 0x30 for byte in range(256))
    for cls in (*(c for c, _ in _RUN_CLASSES), _WIDE)
}
_FREE = frozenset(chr(byte) for byte in range(0x80) if _TABLE[byte] == _SPACE[0])
_RUN = {cls: re.compile(re.escape(cls) + b"+") for cls, _ in _RUN_CLASSES}
# Levels are counted bit-parallel (each costs a few operations on the whole text)
# until few runs are longer still, or at most this many; the rest one by one.
_MAX_LEVELS = 32
_FEW = 64


def classes(text: str) -> bytes:
    """The class string of ``text``: byte ``i`` is the class of character ``i``."""
    return text.encode("utf-8", "surrogatepass").translate(_TABLE, _CONTINUATION)


def count_classes(cls: bytes) -> int:
    """Pieces in a class string (see the module docstring)."""
    total = cls.count(_WIDE)
    for char, per_piece in _RUN_CLASSES:
        if char in cls:
            levels, long_runs = _runs(cls, char, per_piece)
            total += sum(level.bit_count() for level in levels)
            done = len(levels)
            total += sum(-(-(end - start) // per_piece) - done for start, end in long_runs)
    return total


def _runs(cls: bytes, char: bytes, per_piece: int) -> tuple[list[int], list[tuple[int, int]]]:
    """The runs of ``char`` in ``cls``, by how many pieces they hold.

    ``ceil(L / k)`` is the number of ``j >= 0`` with ``L >= j * k + 1``.
    Level ``j`` is the set of run starts whose run is that long, as bits of
    one integer: character ``i`` of ``n`` is bit ``n - 1 - i``, so the
    previous character is one bit up and each level is a shift and an
    ``and`` on the whole text at once. Once a level holds few runs (or after
    ``_MAX_LEVELS``), the runs longer still are found with ``bytes.find`` and
    returned as ``(start, end)``: a megabyte without a space costs no more
    than a megabyte of words, and a table full of long ``|-----|`` runs no
    Python step per row.
    """
    bits = int(cls.translate(_ONLY[char]), 2)
    starts = bits & ~(bits >> 1)
    window = bits  # bit set where the next per_piece characters are all `char`
    for shift in range(1, per_piece):
        window &= bits << shift
    levels: list[int] = []
    reach, length = bits, 1  # reach: the next `length` characters are all `char`
    while True:
        level = starts & reach
        if not level:
            return levels, []
        levels.append(level)
        reach &= window << length
        length += per_piece
        if len(levels) >= _MAX_LEVELS or level.bit_count() <= _FEW:
            break
    long_runs: list[tuple[int, int]] = []
    long_run = char * length
    position = cls.find(long_run)
    while position >= 0:
        end = _RUN[char].match(cls, position).end()  # type: ignore[union-attr]
        long_runs.append((position, end))
        position = cls.find(long_run, end)
    return levels, long_runs


def _piece_starts(cls: bytes) -> str:
    """``"1"`` where a piece begins, ``"0"`` elsewhere: one character per character."""
    size = len(cls)
    if not size:
        return ""
    bits = int(cls.translate(_ONLY[_WIDE]), 2) if _WIDE in cls else 0
    for char, per_piece in _RUN_CLASSES:
        if char not in cls:
            continue
        levels, long_runs = _runs(cls, char, per_piece)
        for number, level in enumerate(levels):  # piece `number` of a run
            bits |= level >> (number * per_piece)
        for start, end in long_runs:  # the pieces past the levels, at start + j * per_piece
            first = start + len(levels) * per_piece
            pieces = -(-(end - first) // per_piece)
            pattern = int(("1" + "0" * (per_piece - 1)) * pieces, 2)
            shift = size - first - pieces * per_piece
            bits |= pattern << shift if shift >= 0 else pattern >> -shift
    return format(bits, f"0{size}b")


def count_tokens(text: str) -> int:
    """Approximate ``cl100k_base`` token count of ``text`` (whitespace is free)."""
    return count_classes(classes(text))


class SpanCounter:
    """Token counts of any span of one text, each in time proportional to the span.

    Built once per text: the class string, and from it a string with a ``1``
    where each piece of the whole text begins. The count of a span that
    starts where a piece starts (or on whitespace, as every span the chunker
    asks about does) is the number of ``1`` in its slice of that string;
    ``str.count`` does that at memory speed. Any other span is counted from
    its slice of the class string.
    """

    def __init__(self, text: str) -> None:
        self._text = text  # a reference: only the piece-start string is the counter's own
        self._starts = _piece_starts(classes(text))

    def _aligned(self, start: int) -> bool:
        starts = self._starts
        return start >= len(starts) or starts[start] == "1" or self._text[start] in _FREE

    def __call__(self, start: int, end: int) -> int:
        if self._aligned(start):
            return self._starts.count("1", start, end)
        return count_tokens(self._text[start:end])

    def budget_end(self, start: int, end: int, budget: int) -> int | None:
        """Where piece ``budget + 1`` of ``[start, end)`` begins; None if there are no more.

        Probes windows of doubling size from ``start``, then bisects the last
        one, so the cost follows the budget, not the length of the span.
        """
        if not self._aligned(start):
            inner = SpanCounter(self._text[start:end])
            found = inner.budget_end(0, end - start, budget)
            return None if found is None else start + found
        low, step = start, 8 * (budget + 1)
        while True:
            high = min(end, start + step)
            if self._starts.count("1", start, high) > budget:
                break
            if high == end:
                return None
            low, step = high, step * 2
        # smallest p in (low, high] with more than `budget` pieces in [start, p)
        while high - low > 1:
            middle = (low + high) // 2
            if self._starts.count("1", start, middle) > budget:
                high = middle
            else:
                low = middle
        return high - 1
