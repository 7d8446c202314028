"""Hostile or broken input: a typed error or a correct result, never a crash or a hang."""

from __future__ import annotations

import pytest

from chunker import InvalidContent, InvalidFrontMatter, SizePolicy, chunk_document
from chunker.invariants import problems

POLICY = SizePolicy()


def _correct(doc: str) -> list[int]:
    chunks = chunk_document("bad", 1, doc, policy=POLICY)
    assert problems(doc, chunks, POLICY) == []
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    return [c.token_count for c in chunks]


def test_invalid_utf8_is_a_typed_error_with_the_offset() -> None:
    with pytest.raises(InvalidContent, match="not valid UTF-8: byte b'\\\\xc3' at offset 9"):
        chunk_document("bad", 1, b"# Title\n\n\xc3(")


def test_nul_bytes_are_a_typed_error_with_the_offset() -> None:
    with pytest.raises(InvalidContent, match="NUL character at offset 3"):
        chunk_document("bad", 1, b"# a\x00b")


def test_lone_surrogates_are_a_typed_error() -> None:
    with pytest.raises(InvalidContent, match="offset 2"):
        chunk_document("bad", 1, "# \ud800")


@pytest.mark.slow
def test_a_20_mb_single_paragraph_is_split_at_sentences_within_bounds() -> None:
    doc = ("Refunds are due within thirty days of the charge. " * 400_000)[:20_000_000]
    sizes = _correct(doc)
    assert len(sizes) > 1000
    assert max(sizes) <= POLICY.max_tokens


def test_a_huge_run_without_whitespace_is_one_flagged_chunk() -> None:
    doc = "# Key\n\n" + "A" * 2_000_000 + "\n\nafter\n"
    chunks = chunk_document("bad", 1, doc)
    assert problems(doc, chunks, POLICY) == []
    flagged = [c for c in chunks if c.unsplittable]
    assert len(flagged) == 1
    assert flagged[0].token_count > POLICY.max_tokens


def test_ten_thousand_headings_give_ten_thousand_unique_chunks() -> None:
    doc = "".join(f"## Same heading\n\nrule {i}\n\n" for i in range(10_000))
    chunks = chunk_document("bad", 1, doc, policy=SizePolicy(min_tokens=0))
    assert problems(doc, chunks, POLICY) == []
    assert len({c.chunk_id for c in chunks}) == 10_000
    assert chunks[1].section == "same-heading-1"


def test_ten_thousand_nested_headings_are_bounded() -> None:
    doc = "".join(f"{'#' * (1 + i % 6)} H{i}\n\nx\n\n" for i in range(10_000))
    _correct(doc)


def test_an_unclosed_fence_runs_to_the_end_and_hides_headings() -> None:
    doc = "# Start\n\nintro\n\n```\n# not a heading\n" + "line of code\n" * 5_000
    chunks = chunk_document("bad", 1, doc)
    assert problems(doc, chunks, POLICY) == []
    assert {tuple(c.heading_path) for c in chunks} == {("bad", "Start")}
    assert len(chunks) > 1  # split at line ends inside the oversized fence


@pytest.mark.parametrize(
    "doc",
    [
        "".join("  " * depth + "- item\n" for depth in range(1_000)),
        "- " * 20_000 + "x\n",
        "> " * 20_000 + "x\n",
        "1. " * 20_000 + "x\n",
        "*" * 50_000 + "x" + "*" * 50_000,
        "[" * 50_000 + "](#a)",
        "<div>\n" * 20_000,
        "| a |\n|---|\n" + "| b |\n" * 5_000,
    ],
    ids=["indented-lists", "inline-lists", "quotes", "ordered", "emphasis", "brackets", "divs",
         "table-rows"],
)  # fmt: skip
def test_deep_nesting_and_long_runs_give_a_correct_result(doc: str) -> None:
    _correct(doc)


@pytest.mark.parametrize(
    "doc",
    [
        "# a\n" + "\n" * 100_000 + "b\n",  # was quadratic in the anchor-link search
        "<a " * 50_000,
        "href='#" * 50_000,
        "{#" * 50_000,
        "[x" * 50_000,
        "a\n===\n" * 5_000,
        "# " + "word " * 50_000 + "\n\ntext\n",
    ],
    ids=["blank-lines", "anchor-spam", "href-spam", "brace-spam", "bracket-spam", "setext-spam",
         "huge-heading"],
)  # fmt: skip
def test_repetitive_input_is_linear_and_correct(doc: str) -> None:
    _correct(doc)


def test_a_huge_heading_is_cut_in_the_path_but_kept_whole_in_the_text() -> None:
    doc = "# " + "word " * 50_000 + "\n\ntext\n"
    chunks = chunk_document("bad", 1, doc)
    assert all(len(c.heading_path[-1]) <= 200 for c in chunks)
    assert chunks[0].heading_path[-1].endswith("word…")
    assert problems(doc, chunks, POLICY) == []


@pytest.mark.parametrize(
    "doc",
    ["<" * 100_000, "<a " * 50_000, "<!--" + "x" * 100_000, "<div>" * 20_000 + "x",
     "<h1>" + "word " * 50_000, "<p>if a <b and 1 <2</p>"],
    ids=["lt", "unclosed-tags", "open-comment", "divs", "open-heading", "stray-lt"],
)  # fmt: skip
def test_hostile_html_is_linear_and_correct(doc: str) -> None:
    chunks = chunk_document("bad", 1, doc, content_type="text/html")
    assert problems(doc, chunks, POLICY) == []
    assert chunks


def test_deeply_nested_front_matter_is_a_typed_error() -> None:
    doc = "---\nk: " + "[" * 5_000 + "]" * 5_000 + "\n---\n# x\n"
    with pytest.raises(InvalidFrontMatter, match="nests collections too deeply"):
        chunk_document("bad", 1, doc)


def test_yaml_aliases_cannot_blow_up_the_error_message() -> None:
    levels = "".join(
        f"{b}: &{b} [{', '.join('*' + a for _ in range(9))}]\n"
        for a, b in zip("abcdef", "bcdefg", strict=True)
    )
    doc = f"---\na: &a [x, x, x, x, x, x, x, x, x]\n{levels}keywords: *g\n---\n# x\n"
    with pytest.raises(InvalidFrontMatter, match="'keywords'") as error:
        chunk_document("bad", 1, doc)
    assert len(str(error.value)) < 500


@pytest.mark.parametrize(
    "doc",
    ["# a\r\rtext\r\r## b\r\rmore\r", "# a\r\n\r\ntext\r\n## b\r\nmore", "\ufeff# BOM\n\ntext"],
)
def test_any_line_ending_keeps_spans_exact(doc: str) -> None:
    chunks = chunk_document("bad", 1, doc, policy=SizePolicy(min_tokens=0))
    assert problems(doc, chunks, POLICY) == []
    assert chunks
