"""Related links (anchors, exceptions), HTML input, and byte-identical output in a new process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunker import SizePolicy, chunk_document
from chunker.invariants import problems
from chunker.links import is_exception
from chunker.sections import github_slug, kramdown_slug

NO_MERGE = SizePolicy(min_tokens=0)


def test_explicit_anchor_ids_and_kramdown_slugs_resolve_to_their_section() -> None:
    doc = (
        "# Terms\n\nSee [data](#bookmark-data) and [B](#additional-terms).\n\n"
        '## <a id="bookmark-data"></a>How we use data\n\nWe use it.\n\n'
        "## 5. Additional Terms\n\nMore.\n"
    )
    chunks = chunk_document("t", 1, doc, policy=NO_MERGE)
    assert chunks[1].heading_path[-1] == "How we use data"
    assert chunks[0].neighbours.related == ["t@v1#how-we-use-data", "t@v1#5-additional-terms"]


def test_an_exception_sibling_links_both_ways_with_the_rule_before_it() -> None:
    doc = (
        "# Policy\n\n## Refunds\n\nWithin 30 days.\n\n## Exclusions\n\nGift cards.\n\n"
        "## Shipping\n\nFree.\n\n### Limitations\n\nNot overseas.\n"
    )
    chunks = chunk_document("p", 1, doc, policy=NO_MERGE)
    related = {c.section: c.neighbours.related for c in chunks}
    assert related["refunds"] == ["p@v1#exclusions"]
    assert related["exclusions"] == ["p@v1#refunds"]
    assert related["shipping"] == ["p@v1#limitations"]
    assert related["limitations"] == ["p@v1#shipping"]
    assert related["policy"] == []


@pytest.mark.parametrize(
    ("title", "exception"),
    [
        ("EXCLUSIONS", True),
        ("Carve-outs", True),
        ("AUSNAHMEN", True),
        ("İSTİSNALAR", True),  # Turkish capitals lowercase to dotted forms
        ("SINIRLAMALAR", True),
        ("Sınırlamalar", True),  # noqa: RUF001
        ("ИСКЛЮЧЕНИЯ", True),
        ("LIMITAÇÕES", True),
        ("Unlessly", False),  # whole words only
        ("Refunds", False),
    ],
)
def test_exception_headings_are_found_in_any_case(title: str, exception: bool) -> None:
    assert is_exception(title) is exception


HTML = (
    "<html><head><title>Refund  policy</title><style>h1 {color: red}</style></head><body>"
    "<p>Intro &amp; scope</p>"
    '<h1 id="refunds">Refunds</h1><p>Within 30 days. <a href="#limits">Limits</a></p>'
    "<h2>Exceptions</h2><ul><li>abuse</li><li>fraud</li></ul>"
    "<h1 id='limits'>Limits <em>apply</em></h1><table><tr><td>1</td></tr></table>"
    "</body></html>"
)


def test_html_headings_start_sections_and_text_is_readable() -> None:
    chunks = chunk_document("h", 1, HTML, content_type="text/html", policy=NO_MERGE)
    assert problems(HTML, chunks, NO_MERGE) == []
    assert [(c.section, c.heading_path[1:]) for c in chunks] == [
        ("_preamble", []),
        ("refunds", ["Refunds"]),
        ("exceptions", ["Refunds", "Exceptions"]),
        ("limits-apply", ["Limits apply"]),
    ]
    assert chunks[0].text == "Intro & scope"
    assert chunks[2].text == "Exceptions\nabuse\nfraud"
    assert chunks[1].neighbours.related == ["h@v1#exceptions", "h@v1#limits-apply"]
    assert all(c.content_type == "text/html" for c in chunks)
    assert chunks[1].heading_path == ["Refund policy", "Refunds"]  # the <title> names it
    assert chunks[0].metadata.title == "Refund policy"


DETERMINISM = """
import json, sys
from chunker import chunk_document, SizePolicy
doc = json.loads(sys.stdin.read())
out = [c.model_dump_json() for c in chunk_document("d", 7, doc["md"], policy=SizePolicy(0, 40))]
out += [c.model_dump_json() for c in chunk_document("h", 7, doc["html"], content_type="text/html")]
sys.stdout.write("\\n".join(out))
"""


def test_the_same_input_gives_byte_identical_output_in_a_new_process() -> None:
    rules = "".join(
        f"## Rule {i % 7}\n\n{'word ' * (i * 7 % 50)}\n\n### Exceptions\n\nx\n\n" for i in range(40)
    )
    table = "| a | b |\n|---|---|\n" + "| 1 | 2 |\n" * 60
    markdown = "---\ntitle: Same\nkeywords: [b, a]\n---\nintro\n\n" + rules + table
    payload = json.dumps({"md": markdown, "html": HTML})
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", DETERMINISM],
            input=payload,
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        outputs.add(result.stdout)
    here = [c.model_dump_json() for c in chunk_document("d", 7, markdown, policy=SizePolicy(0, 40))]
    here += [c.model_dump_json() for c in chunk_document("h", 7, HTML, content_type="text/html")]
    assert outputs == {"\n".join(here)}


@given(st.text(max_size=40))
def test_heading_slugs_follow_githubs_rule(title: str) -> None:
    """Lowercase, everything but word characters, spaces and hyphens dropped, spaces
    to hyphens (the fast path for plain titles must agree)."""
    slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
    assert github_slug(title) == (slug[:80].rstrip("-") or "section")


@given(st.text(max_size=40))
def test_kramdown_slugs_follow_kramdowns_rule(title: str) -> None:
    """Lowercase, all but ASCII letters, digits, spaces and hyphens dropped, spaces to
    hyphens, leading digits and hyphens dropped (the fast path must agree)."""
    slug = re.sub(r"[^a-z0-9 \-]", "", title.lower()).replace(" ", "-")
    assert kramdown_slug(title) == slug.lstrip("0123456789-")
