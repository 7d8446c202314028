"""Contentful rich text, Portable Text and Strapi blocks become Markdown the chunker cuts at
the CMS's headings, with the words, marks, links, lists, quotes and tables kept."""

from __future__ import annotations

import pytest
from support.cms_signers import contentful_rich_text, portable_text, strapi_blocks

from chunker import SizePolicy, chunk_document
from webhooks.adapters.richtext import (
    RichTextError,
    contentful_to_markdown,
    portable_text_to_markdown,
    strapi_blocks_to_markdown,
)

NO_MERGE = SizePolicy(min_tokens=0, max_tokens=800)


def headings(markdown: str) -> list[list[str]]:
    """The heading path of each chunk, below the document's own title (its id here)."""
    chunks = chunk_document("doc", 1, markdown, policy=NO_MERGE)
    assert all(c.heading_path[0] == "doc" for c in chunks)
    return [c.heading_path[1:] for c in chunks]


def test_contentful_rich_text_keeps_headings_marks_links_lists_quotes_and_tables() -> None:
    markdown = contentful_to_markdown(contentful_rich_text())
    assert headings(markdown) == [["Refunds"], ["Refunds", "Eligibility"],
                                  ["Refunds", "Exceptions"]]
    assert "within **60 days**." in markdown
    assert "- Unused items\n- Damaged on [delivery](https://example.com/delivery)\n" in markdown
    assert "> Gift cards are final." in markdown
    assert "| Item | Days |\n| --- | --- |\n| Scooter | 30 |" in markdown
    assert "\n---\n" in markdown


def test_portable_text_keeps_headings_nested_lists_marks_and_links() -> None:
    markdown = portable_text_to_markdown(portable_text())
    assert headings(markdown) == [["Deliveries"], ["Deliveries", "Late deliveries"],
                                  ["Deliveries", "Lost parcels"]]
    assert "Orders ship in **two days**." in markdown
    assert ("- Refund the fee\n   - _within a week_\n- see [the terms](https://example.com/t)"
            in markdown)
    assert "> Report within 48 hours." in markdown
    assert "image-abc" not in markdown


def test_numbered_portable_text_lists_count_per_level() -> None:
    blocks = [{"_type": "block", "style": "normal", "listItem": "number", "level": lvl,
               "children": [{"_type": "span", "text": t, "marks": []}]}
              for lvl, t in ((1, "one"), (1, "two"), (2, "two.a"), (1, "three"))]
    assert portable_text_to_markdown(blocks) == "1. one\n2. two\n   1. two.a\n3. three\n"


def test_strapi_blocks_keep_headings_ordered_lists_and_links() -> None:
    markdown = strapi_blocks_to_markdown(strapi_blocks())
    assert headings(markdown) == [["Warranty"], ["Warranty", "Claims"]]
    assert "Two years on **every** device." in markdown
    assert "1. Open a ticket\n2. Send the [form](https://example.com/form)" in markdown


@pytest.mark.parametrize(("convert", "value", "where"), [
    (contentful_to_markdown, {"nodeType": "paragraph"}, "the root"),
    (contentful_to_markdown, {"nodeType": "document", "content": [{"value": "x"}]},
     "content[0] has no nodeType"),
    (portable_text_to_markdown, [{"_type": "block", "children": "text"}], "[0].children"),
    (portable_text_to_markdown, [{"style": "h1"}], "[0] has no _type"),
    (strapi_blocks_to_markdown, [{"type": "heading", "level": 9, "children": []}], "[0].level"),
])
def test_a_value_of_the_wrong_shape_names_the_node(convert: object, value: object,
                                                   where: str) -> None:
    with pytest.raises(RichTextError) as caught:
        convert(value)  # type: ignore[operator]
    assert where in str(caught.value)
