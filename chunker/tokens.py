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
character (ASCII letter, digit, punctuation, two-byte letter, wide
character, whitespace), by one ``bytes.translate`` of its UTF-8 encoding
that also drops continuation bytes. numpy then finds the runs (where the
class changes), and a run of ``L`` characters of a class cut every ``k`` gets
its pieces at ``start``, ``start + k``... The result is a byte string with a
1 where each piece begins, so a span's count is the number of 1s in its
slice (``bytes.count`` for a short span, numpy's ``count_nonzero`` for a long
one). No per-character Python code runs; numpy works on windows of the text,
so its scratch arrays stay small for a document of any size.

Measured against ``cl100k_base`` on every chunk of the HEAD documents of both
corpora (``bench/bench_chunker.py --tokens``; figures in ``docs/chunking.md``).
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

# Class bytes: the low 7 bits are the characters a piece of the class holds (0 for
# whitespace, which makes no pieces); two-byte letters differ from punctuation by
# the high bit only.
_LETTER, _DIGIT, _PUNCT, _NARROW, _WIDE, _SPACE = 6, 3, 2, 0x82, 1, 0


def _class_of_byte(byte: int) -> int:
    char = chr(byte)
    if byte < 0x80:
        if char.isspace() or char == "_":
            return _SPACE
        if char.isascii() and char.isalpha():
            return _LETTER
        return _DIGIT if char.isdigit() else _PUNCT
    return _NARROW if byte < 0xE0 else _WIDE  # lead bytes; continuation bytes are dropped


_TABLE = bytes(_class_of_byte(byte) for byte in range(256))
_CONTINUATION = bytes(range(0x80, 0xC0))
_FREE = frozenset(chr(byte) for byte in range(0x80) if _TABLE[byte] == _SPACE)
# characters a piece, by class byte (the low 7 bits); whitespace's runs get 128 so that
# they count as one piece here (their marks are cleared afterwards)
_PER_PIECE = np.array([(byte & 0x7F) or 128 for byte in range(256)], np.uint8)
# numpy works on windows of about a third of the text, from 2,048 to 16,384 characters,
# each ending where a run ends: its scratch arrays (about six bytes a character of the
# window) then stay a small part of the peak for a document of any size, for a fixed
# cost of about 15 microseconds a window. Larger windows cost memory on documents of a
# few kB (their median peak: 5.7x their size at 2,048, 6.0x at 3,072) for a little
# speed (about 1.5% of a chunker run at 3,072): bench/bench_chunker.py measures both.
_WINDOWS = 3
_SMALLEST_WINDOW, _LARGEST_WINDOW = 1 << 11, 1 << 14
# long runs are marked for many windows at once, at most about this many runs a batch
_BATCH = 1 << 10
_RUN_END = re.compile(rb"(.)\1*", re.DOTALL)
# below this many characters, the runs are counted one by one: numpy's fixed cost per
# call is larger than the work
_SHORT = 256
# spans at least this long are counted by numpy rather than bytes.count
_LONG_SPAN = 1024
_RUN = re.compile(rb"([^\x00])\1*")


def classes(text: str, utf8: bytes | None = None) -> bytes:
    """The class string of ``text``: byte ``i`` is the class of character ``i``.
    ``utf8``, when given, is ``text`` encoded in UTF-8."""
    if text.isascii():  # one byte a character already: no UTF-8 encoding to shrink
        return (utf8 or text.encode("ascii")).translate(_TABLE)
    encoded = utf8 if utf8 is not None else text.encode("utf-8", "surrogatepass")
    return encoded.translate(_TABLE, _CONTINUATION)


def piece_starts(cls: bytes) -> bytearray:
    """1 where a piece begins, 0 elsewhere: one byte per byte of ``cls``."""
    size = len(cls)
    marks = bytearray(size)  # numpy writes into it in place: no copy to hand out
    if not size:
        return marks
    classes_ = np.frombuffer(cls, np.uint8)
    view = np.frombuffer(marks, np.uint8)
    window = min(max(size // _WINDOWS, _SMALLEST_WINDOW), _LARGEST_WINDOW)
    pending: list[_LongRuns] = []  # long runs of the windows so far, marked in batches
    waiting = 0
    start = 0
    while start < size:
        end = size if size - start <= window else _run_end(cls, start + window - 1)
        found = _mark_runs(classes_[start:end], view[start:end], start)
        if found is not None:
            pending.append(found)
            waiting += len(found[0])
            if waiting > _BATCH:
                _mark_long_runs(view, pending)
                pending, waiting = [], 0
        start = end
    if pending:
        _mark_long_runs(view, pending)
    np.minimum(view, classes_, out=view)  # no piece begins in whitespace (class 0)
    return marks


def _run_end(cls: bytes, position: int) -> int:
    """End of the run that holds ``position``."""
    return _RUN_END.match(cls, position).end()  # type: ignore[union-attr]


# the runs of a window that hold more than one piece: where each begins (in the whole
# text), its characters a piece, and how many pieces it holds after its first
_LongRuns = tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8], npt.NDArray[np.int32]]


def _mark_runs(
    window: npt.NDArray[np.uint8], marks: npt.NDArray[np.uint8], offset: int
) -> _LongRuns | None:
    """Mark where each run in ``window`` begins (its first and last runs are whole;
    whitespace's marks are cleared afterwards), and return its runs of more than
    one piece, which ``_mark_long_runs`` marks for several windows at once."""
    change = marks.view(np.bool_)  # 1 where a run begins: the first piece of each run
    change[0] = True
    np.not_equal(window[1:], window[:-1], out=change[1:])
    starts = change.nonzero()[0].astype(np.int32)  # where each run begins
    per = _PER_PIECE.take(window.take(starts))  # the run's characters a piece
    lengths = np.empty_like(starts)
    np.subtract(starts[1:], starts[:-1], out=lengths[:-1])
    lengths[-1] = len(window) - starts[-1]
    long = (lengths > per).nonzero()[0]
    if not len(long):
        return None
    step = per.take(long)
    more = lengths.take(long)
    more -= 1
    more //= step  # pieces after the first
    first = starts.take(long)
    first += offset
    return first, step, more


def _mark_long_runs(marks: npt.NDArray[np.uint8], runs: list[_LongRuns]) -> None:
    """Mark the pieces after the first of every run in ``runs``: piece j (1..more)
    of a run begins at first + j * step."""
    if len(runs) == 1:
        first, step, more = runs[0]
    else:
        first, step, more = (np.concatenate(column) for column in zip(*runs, strict=True))
    offsets = np.arange(1, int(more.sum()) + 1, dtype=np.int32)  # offsets fit: < 2**31
    offsets -= np.repeat(np.cumsum(more, dtype=np.int32) - more, more)
    offsets *= np.repeat(step, more)
    offsets += np.repeat(first, more)
    marks[offsets] = 1


def count_tokens(text: str) -> int:
    """Approximate ``cl100k_base`` token count of ``text`` (whitespace is free)."""
    cls = classes(text)
    if len(cls) < _SHORT:
        runs = _RUN.finditer(cls)
        return sum(-(-(run.end() - run.start()) // (run[0][0] & 0x7F)) for run in runs)
    return piece_starts(cls).count(1)


class SpanCounter:
    """Token counts of any span of one text, each in time proportional to the span.

    Built once per text: a byte string with a 1 where each piece of the
    whole text begins. The count of a span that starts where a piece starts
    (or on whitespace, as every span the chunker asks about does) is the
    number of 1s in its slice of that string (``_count``). Any other span is
    counted from its own slice of the text.
    """

    def __init__(self, text: str, cls: bytes | None = None) -> None:
        """``cls``, when given, is ``classes(text)``."""
        self._text = text  # a reference: only the piece marks are the counter's own
        self._starts = piece_starts(cls if cls is not None else classes(text))
        self._view = np.frombuffer(self._starts, np.uint8)  # the same bytes, for numpy

    def _count(self, start: int, end: int) -> int:
        """1s in ``[start, end)`` of the marks: ``bytes.count`` for a short span,
        numpy's vectorised count (ten times faster a byte, slower to call) for a long one."""
        if end - start < _LONG_SPAN:
            return self._starts.count(1, start, end)
        return int(np.count_nonzero(self._view[start:end]))

    def _aligned(self, start: int) -> bool:
        starts = self._starts
        return start >= len(starts) or starts[start] == 1 or self._text[start] in _FREE

    def __call__(self, start: int, end: int) -> int:
        if self._aligned(start):
            return self._count(start, end)
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
        count = self._count
        low, step, below = start, 8 * (budget + 1), 0  # below: pieces in [start, low)
        while True:
            high = min(end, start + step)
            more = count(low, high)
            if below + more > budget:
                break
            if high == end:
                return None
            low, step, below = high, step * 2, below + more
        # smallest p in (low, high] with more than `budget` pieces in [start, p)
        while high - low > 1:
            middle = (low + high) // 2
            more = count(low, middle)
            if below + more > budget:
                high = middle
            else:
                low, below = middle, below + more
        return high - 1
