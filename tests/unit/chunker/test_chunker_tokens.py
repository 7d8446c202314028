"""count_tokens: the offline approximation, its two counts checked against a plain one."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunker import count_tokens
from chunker.tokens import SpanCounter

# The model in the plainest terms: (class, characters per piece) of one character.
_PER_PIECE = {"letter": 6, "digit": 3, "punct": 2, "narrow": 2, "wide": 1}


def _class(char: str) -> str:
    if char.isascii():
        if char.isspace() or char == "_":
            return "space"
        if char.isalpha():
            return "letter"
        return "digit" if char.isdigit() else "punct"
    return "narrow" if len(char.encode("utf-8", "surrogatepass")) == 2 else "wide"


def _reference(text: str) -> int:
    total = 0
    for cls, run in itertools.groupby(text, key=_class):
        if cls != "space":
            length = len(list(run))
            total += -(-length // _PER_PIECE[cls])
    return total


def test_words_cjk_digits_and_punctuation_count_like_cl100k_pieces() -> None:
    assert count_tokens("") == 0
    assert count_tokens("   \n\n\t") == 0
    assert count_tokens("refund policy") == 2
    assert count_tokens("subprocessors") == 3  # six-letter runs
    assert count_tokens("政策规定") == 4  # one per CJK character
    assert count_tokens("2024-01-01") == 6  # 202|4|-|01|-|01, digits in threes as cl100k
    assert count_tokens("{{ site.email_support }}") == 7  # {{|site|.|email|suppor|t|}}
    assert count_tokens("Geschäftsbedingungen") == 5  # Gesch|ä|ftsbed|ingung|en
    assert count_tokens("don\u2019t") == 3  # a curly quote is one piece


@pytest.mark.parametrize(
    "text",
    [
        "A" * 200_001,
        "ab" * 100_003 + " x",
        "_" * 70_000 + "abc",
        "é" * 150_001,
        "word " * 30_000,
        "seventeen-letters " * 40_000,  # long runs in many windows and batches
        "1234567|" * 30_000,
    ],
    ids=["one-run", "pairs", "underscores", "accented", "words", "long-words", "digits"],
)
def test_long_texts_count_like_the_plain_model(text: str) -> None:
    assert count_tokens(text) == _reference(text)


@given(st.text(max_size=200))
def test_any_text_counts_like_the_plain_model(text: str) -> None:
    assert count_tokens(text) == _reference(text)


@given(st.lists(st.text(max_size=30), max_size=8), st.sampled_from([" ", "\n", "\n\n", "\r\n"]))
def test_counts_add_up_across_whitespace(parts: list[str], gap: str) -> None:
    text = gap.join(parts)
    assert count_tokens(text) == sum(count_tokens(part) for part in parts)
    counter = SpanCounter(text)
    assert counter(0, len(text)) == count_tokens(text)
    for cut in (m.end() for m in re.finditer(re.escape(gap), text)):
        assert counter(cut, len(text)) == count_tokens(text[cut:])
        assert counter(0, cut) == count_tokens(text[:cut])


@given(st.text(alphabet="ab1.é政 _\u00a0\u3000", max_size=80), st.data())
def test_any_span_counts_like_its_slice(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert SpanCounter(text)(start, end) == count_tokens(text[start:end])


@given(st.text(alphabet="ab1.é政 \n", max_size=400), st.integers(0, 60))
def test_budget_end_is_where_the_piece_after_the_budget_begins(text: str, budget: int) -> None:
    start = len(text) // 3  # often inside a run: the slow path must agree
    end = SpanCounter(text).budget_end(start, len(text), budget)
    text = text[start:]
    if end is not None:
        end -= start
    if count_tokens(text) <= budget:
        assert end is None
    else:
        assert end is not None
        assert count_tokens(text[:end]) == budget  # a piece begins exactly here
        assert count_tokens(text[: end + 1]) == budget + 1


@given(st.text(alphabet="ab1.é政 _\u00a0\u3000-", min_size=256, max_size=3000))
def test_texts_past_the_short_path_count_like_the_plain_model(text: str) -> None:
    assert count_tokens(text) == _reference(text)
