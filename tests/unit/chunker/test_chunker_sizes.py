"""The size policy: split big sections at block boundaries, merge small ones under one parent."""

from __future__ import annotations

from chunker import SizePolicy, chunk_document, count_tokens
from chunker.invariants import problems


def _para(word: str, n: int) -> str:
    return " ".join([word] * n)


def test_a_long_section_is_split_between_paragraphs_and_each_part_keeps_the_path() -> None:
    policy = SizePolicy(min_tokens=0, max_tokens=50)
    paragraphs = [_para(f"w{i}", 20) for i in range(6)]
    doc = "# Rule\n\n" + "\n\n".join(paragraphs)
    chunks = chunk_document("d", 1, doc, policy=policy)
    assert problems(doc, chunks, policy) == []
    assert len(chunks) > 1
    assert all(c.heading_path == ["d", "Rule"] for c in chunks)
    assert [(c.part, c.parts) for c in chunks] == [(i + 1, len(chunks)) for i in range(len(chunks))]
    assert [c.section for c in chunks][:2] == ["rule", "rule-part-2"]
    for chunk in chunks:  # cuts fall between paragraphs, never inside one
        assert set(chunk.text.split("\n\n")) <= {"# Rule", *paragraphs}


def test_a_long_table_is_split_between_rows_with_the_header_repeated() -> None:
    policy = SizePolicy(min_tokens=0, max_tokens=60)
    header = "| Plan | Refund |\n|------|--------|"
    rows = "\n".join(f"| plan{i} | {i} days |" for i in range(40))
    doc = f"# Refunds\n\n{header}\n{rows}\n"
    chunks = chunk_document("d", 1, doc, policy=policy)
    assert problems(doc, chunks, policy) == []
    assert len(chunks) > 2
    assert chunks[0].repeated_header is None
    for chunk in chunks[1:]:
        assert chunk.repeated_header == header
        assert chunk.text.startswith(header + "\n| plan")
        assert all(line.startswith("|") and line.endswith("|") for line in chunk.text.splitlines())


def test_a_long_list_is_split_between_items_never_inside_one() -> None:
    policy = SizePolicy(min_tokens=0, max_tokens=40)
    items = [f"- item{i} " + _para(f"x{i}", 8) for i in range(20)]
    doc = "# List\n\n" + "\n".join(items) + "\n"
    chunks = chunk_document("d", 1, doc, policy=policy)
    assert problems(doc, chunks, policy) == []
    seen = [line for c in chunks for line in c.text.splitlines() if line.startswith("- ")]
    assert seen == items


def test_a_fence_is_not_split_unless_it_alone_is_too_big() -> None:
    fence = "```\n" + "\n".join(f"line {i}" for i in range(10)) + "\n```"
    policy = SizePolicy(min_tokens=0, max_tokens=max(40, count_tokens(fence)))
    doc = "# Code\n\n" + _para("intro", 30) + "\n\n" + fence + "\n\n" + _para("outro", 30)
    chunks = chunk_document("d", 1, doc, policy=policy)
    assert problems(doc, chunks, policy) == []
    assert any(fence in c.text for c in chunks)


def test_small_subsections_merge_into_their_small_parent() -> None:
    doc = "# Refunds\n\nShort.\n\n## Exceptions\n\nAbuse.\n\n## How\n\nEmail us.\n"
    chunks = chunk_document("d", 1, doc)
    assert len(chunks) == 1
    assert chunks[0].heading_path == ["d", "Refunds"]
    assert chunks[0].text == doc.strip()


def test_sections_under_different_parents_are_never_merged() -> None:
    doc = "# A\n\n## A1\n\nsmall\n\n# B\n\n## B1\n\nsmall\n"
    chunks = chunk_document("d", 1, doc)
    assert [c.heading_path for c in chunks] == [["d", "A"], ["d", "B"]]
    assert "B1" not in chunks[0].text


def test_merging_stops_before_the_maximum_and_big_subsections_stay_alone() -> None:
    policy = SizePolicy(min_tokens=30, max_tokens=60)
    doc = (
        "# Parent\n\nshort intro\n\n"
        f"## Small\n\n{_para('s', 10)}\n\n"
        f"## Big\n\n{_para('b', 40)}\n\n"
        f"## Later\n\n{_para('l', 5)}\n"
    )
    chunks = chunk_document("d", 1, doc, policy=policy)
    assert problems(doc, chunks, policy) == []
    assert [c.heading_path[-1] for c in chunks] == ["Parent", "Big", "Later"]
    assert "## Small" in chunks[0].text


def test_text_before_the_first_heading_is_its_own_chunk_under_the_title() -> None:
    doc = "---\ntitle: Terms\n---\nEffective 2024.\n\n# One\n\nbody\n"
    chunks = chunk_document("d", 1, doc)
    assert [(c.section, c.heading_path, c.text) for c in chunks] == [
        ("_preamble", ["Terms"], "Effective 2024."),
        ("one", ["Terms", "One"], "# One\n\nbody"),
    ]


def test_sentences_are_the_last_boundary_before_whitespace() -> None:
    policy = SizePolicy(min_tokens=0, max_tokens=30)
    doc = " ".join(f"Sentence number {i} says one thing." for i in range(30))
    chunks = chunk_document("d", 1, doc, policy=policy)
    assert problems(doc, chunks, policy) == []
    assert all(c.text.endswith(".") for c in chunks)


def test_parts_are_as_few_as_fit_and_evened_out() -> None:
    policy = SizePolicy(min_tokens=0, max_tokens=100)
    # 12 paragraphs of 10 tokens: greedy would give 100 + 20; even parts are 60 + 60
    doc = "\n\n".join(_para(f"p{i}", 5) for i in range(12))
    chunks = chunk_document("d", 1, doc, policy=policy)
    assert problems(doc, chunks, policy) == []
    assert [c.token_count for c in chunks] == [60, 60]
