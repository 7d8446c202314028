"""An offline token count that approximates OpenAI's ``cl100k_base``.

The chunker has to count tokens for every section of every document it sees,
must stay pure (no tokenizer files to download) and fast. It counts the
pieces that ``cl100k_base`` mostly turns into one token each: a run of up to
six ASCII letters, up to two other letters (accented Latin, Cyrillic, Greek,
CJK...), up to three digits, a run of punctuation, a run of newlines.
The error against the real tokenizer, measured on both corpora by
``bench/bench_chunker.py --tokens``, is written down in ``docs/chunking.md``.
"""

from __future__ import annotations

import re

_PIECE = re.compile(r"[A-Za-z]{1,6}|[^\W\d_A-Za-z]{1,2}|\d{1,3}|[^\w\s]+|\n+")
# Above this size the text is counted in windows, so that no list of
# millions of matches is ever held at once.
_WINDOW = 1 << 16


def count_tokens(text: str) -> int:
    """Approximate ``cl100k_base`` token count of ``text``."""
    if len(text) <= _WINDOW:
        return len(_PIECE.findall(text))
    total = 0
    start = 0
    size = len(text)
    while start < size:
        end = min(start + _WINDOW, size)
        if end < size:
            # cut at whitespace so that no piece straddles two windows
            cut = text.rfind(" ", start, end)
            if cut > start:
                end = cut
        total += len(_PIECE.findall(text, start, end))
        start = end
    return total
