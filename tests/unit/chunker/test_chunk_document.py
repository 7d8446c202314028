"""chunk_document: headings, heading path, embed text, ids, metadata, front matter."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from chunker import (
    Chunk,
    ChunkerError,
    InvalidContent,
    InvalidFrontMatter,
    InvalidMetadata,
    SizePolicy,
    chunk_document,
)

# min 0: no merging, so every heading is its own chunk
NO_MERGE = SizePolicy(min_tokens=0, max_tokens=800)

DOC = """---
title: Refund policy
scope: [us, eu]
valid_from: 2024-01-01
keywords: refunds, billing
layout: sheet
---
Read this first.

# A fair refund policy

We refund within 30 days.

## Exceptions

Accounts closed for abuse.

Setext heading
--------------

```
# not a heading
```

#### Skipped *level* with a [link](https://x.example) ##

Deep text.
"""


def test_every_heading_starts_a_chunk_with_its_heading_path() -> None:
    chunks = chunk_document("refund", 3, DOC, policy=NO_MERGE)
    assert [c.heading_path for c in chunks] == [
        ["Refund policy"],
        ["Refund policy", "A fair refund policy"],
        ["Refund policy", "A fair refund policy", "Exceptions"],
        ["Refund policy", "A fair refund policy", "Setext heading"],
        ["Refund policy", "A fair refund policy", "Setext heading", "Skipped level with a link"],
    ]
    assert [c.ordinal for c in chunks] == [0, 1, 2, 3, 4]


def test_chunk_ids_are_document_version_and_section_slug() -> None:
    chunks = chunk_document("refund", 3, DOC, policy=NO_MERGE)
    assert [c.chunk_id for c in chunks] == [
        "refund@v3#_preamble",
        "refund@v3#a-fair-refund-policy",
        "refund@v3#exceptions",
        "refund@v3#setext-heading",
        "refund@v3#skipped-level-with-a-link",
    ]


def test_text_is_the_source_span_and_embed_text_prepends_the_path() -> None:
    chunks = chunk_document("refund", 3, DOC, policy=NO_MERGE)
    for chunk in chunks:
        assert chunk.text == DOC[chunk.char_start : chunk.char_end]
        assert chunk.embed_text == " > ".join(chunk.heading_path) + "\n" + chunk.text
    assert chunks[3].text.endswith("```\n# not a heading\n```")
    assert chunks[0].text == "Read this first."


def test_front_matter_becomes_metadata_and_event_metadata_wins() -> None:
    changed = datetime(2024, 5, 1, tzinfo=UTC)
    chunks = chunk_document(
        "refund",
        3,
        DOC,
        metadata={"title": "Refunds (CMS)", "access_labels": ["agents"]},
        changed_at=changed,
    )
    meta = chunks[0].metadata
    assert meta.title == "Refunds (CMS)"
    assert meta.scope == ["us", "eu"]
    assert meta.valid_from == date(2024, 1, 1)
    assert meta.keywords == ["refunds", "billing"]
    assert meta.access_labels == ["agents"]
    assert all(c.changed_at == changed and c.metadata == meta for c in chunks)
    assert chunks[0].heading_path == ["Refunds (CMS)"]


def test_without_a_title_the_path_starts_at_the_document_id() -> None:
    chunks = chunk_document("docs/privacy/en-US", 1, "# Privacy\n\nWe care.\n")
    assert chunks[0].heading_path == ["docs/privacy/en-US", "Privacy"]


def test_neighbours_link_previous_next_anchor_targets_and_exceptions() -> None:
    doc = (
        "# Refunds\n\nSee [the limits](#limits-on-refunds).\n\n"
        "## Exceptions to refunds\n\nAbuse.\n\n# Limits on refunds\n\nAt most $100.\n"
    )
    chunks = chunk_document("r", 1, doc, policy=NO_MERGE)
    by_slug = {c.section: c for c in chunks}
    refunds = by_slug["refunds"]
    assert refunds.neighbours.previous is None
    assert refunds.neighbours.next == "r@v1#exceptions-to-refunds"
    assert set(refunds.neighbours.related) == {
        "r@v1#exceptions-to-refunds",
        "r@v1#limits-on-refunds",
    }
    assert by_slug["exceptions-to-refunds"].neighbours.related == ["r@v1#refunds"]
    assert by_slug["limits-on-refunds"].neighbours.next is None


def test_duplicate_headings_get_unique_slugs_in_order() -> None:
    doc = "# FAQ\n\na\n\n# FAQ\n\nb\n\n# FAQ 1\n\nc\n"
    chunks = chunk_document("d", 1, doc, policy=NO_MERGE)
    assert [c.section for c in chunks] == ["faq", "faq-1", "faq-1-1"]


@pytest.mark.parametrize("content", ["", "   \n\n", b"", "---\ntitle: Only front matter\n---\n"])
def test_empty_document_gives_no_chunks(content: str | bytes) -> None:
    assert chunk_document("d", 1, content) == []


def test_bytes_are_decoded_as_utf8() -> None:
    chunks = chunk_document("d", 1, "# Çalışma\n\nçok güzel\n".encode())  # noqa: RUF001
    assert chunks[0].section == "çalışma"  # noqa: RUF001


@pytest.mark.parametrize(
    ("content", "error", "message"),
    [
        (b"# ok\n\n\xff\xfe bad", InvalidContent, "byte .*xff.* at offset 6"),
        ("# ok\n\nnul \x00 here", InvalidContent, "NUL character at offset 10"),
        ("---\ntitle: [unclosed\n---\n# x\n", InvalidFrontMatter, "not valid YAML"),
        ("---\n- a\n- b\n---\n# x\n", InvalidFrontMatter, "mapping"),
        ("---\nvalid_from: someday\n---\n# x\n", InvalidFrontMatter, "'valid_from'"),
    ],
)
def test_bad_content_is_a_typed_error_naming_the_problem(
    content: str | bytes, error: type[ChunkerError], message: str
) -> None:
    with pytest.raises(error, match=message):
        chunk_document("d", 1, content)


def test_bad_arguments_are_typed_errors() -> None:
    with pytest.raises(InvalidMetadata, match="'colour'"):
        chunk_document("d", 1, "# x\n", metadata={"colour": "red"})
    with pytest.raises(InvalidMetadata, match="'@'"):
        chunk_document("a@b", 1, "# x\n")
    with pytest.raises(InvalidMetadata, match="version"):
        chunk_document("d", 0, "# x\n")
    with pytest.raises(InvalidContent, match="text/plain"):
        chunk_document("d", 1, "# x\n", content_type="text/plain")
    assert issubclass(InvalidFrontMatter, ChunkerError)


def test_event_metadata_can_clear_a_front_matter_value_and_set_the_source_path() -> None:
    doc = "---\ntitle: From front matter\nvalid-to: 2025-12-31\naccess_labels: staff\n---\n# x\n"
    meta = chunk_document("d", 1, doc, metadata={"valid_to": None, "source_path": "policies/x.md"})[
        0
    ].metadata
    assert meta.title == "From front matter"
    assert meta.valid_to is None
    assert meta.access_labels == ["staff"]
    assert meta.source_path == "policies/x.md"


def test_an_unclosed_front_matter_fence_is_a_rule_not_metadata() -> None:
    chunks = chunk_document("d", 1, "---\ntitle: never closed\n\n# Heading\n\ntext\n")
    assert chunks[0].metadata.title is None
    assert "title: never closed" in chunks[0].text


def test_change_event_metadata_overrides_are_accepted_as_they_come() -> None:
    from events.model import EventMetadata

    overrides = EventMetadata(
        title="CMS title", valid_from=date(2025, 1, 1), access_labels=["eu-agents"]
    ).overrides()
    meta = chunk_document("d", 1, DOC, metadata=overrides)[0].metadata
    assert (meta.title, meta.valid_from, meta.access_labels) == (
        "CMS title",
        date(2025, 1, 1),
        ["eu-agents"],
    )
    assert meta.scope == ["us", "eu"]  # not in the event: front matter stands


def test_chunks_built_without_validation_equal_validated_ones() -> None:
    """``chunker.model.build`` skips pydantic's per-field work: the result must not differ."""
    text = "# Refunds\n\nWithin 30 days.\n\n## Exceptions\n\nSale items."
    chunks = chunk_document("refund", 3, text)
    for chunk in chunks:
        again = Chunk.model_validate(chunk.model_dump())
        assert again == chunk
        assert again.model_dump_json() == chunk.model_dump_json()
        assert chunk.model_fields_set == again.model_fields_set
