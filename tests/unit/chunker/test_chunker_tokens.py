"""count_tokens: the offline approximation is additive and counts long texts exactly."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunker import count_tokens
from chunker.tokens import PIECE, SpanCounter


def test_words_cjk_digits_and_punctuation_count_like_cl100k_pieces() -> None:
    assert count_tokens("") == 0
    assert count_tokens("   \n\n\t") == 0
    assert count_tokens("refund policy") == 2
    assert count_tokens("subprocessors") == 3  # six-letter runs
    assert count_tokens("政策规定") == 4  # one per CJK character
    assert count_tokens("2024-01-01") == 6  # 202|4|-|01|-|01, digits in threes as cl100k
    assert count_tokens("{{ site.email_support }}") == 7  # {{|site|.|email|suppor|t|}}


@pytest.mark.parametrize(
    "text",
    ["A" * 200_001, "ab" * 100_003 + " x", "_" * 70_000 + "abc", "é" * 150_001, "word " * 30_000],
    ids=["one-run", "pairs", "unmatched", "accented", "words"],
)
def test_long_texts_counted_in_windows_match_one_pass(text: str) -> None:
    assert count_tokens(text) == len(PIECE.findall(text))


@given(st.lists(st.text(max_size=30), max_size=8), st.sampled_from([" ", "\n", "\n\n", "\r\n"]))
def test_counts_add_up_across_whitespace(parts: list[str], gap: str) -> None:
    text = gap.join(parts)
    assert count_tokens(text) == sum(count_tokens(part) for part in parts)
    cuts = [m.start() for m in re.finditer(re.escape(gap), text)]
    counter = SpanCounter(text, cuts)
    assert counter(0, len(text)) == count_tokens(text)
