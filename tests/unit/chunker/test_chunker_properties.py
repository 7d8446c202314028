"""Lossless, bounded, consistent and repeatable on generated Markdown (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunker import Chunk, SizePolicy, chunk_document
from chunker.invariants import problems

WORDS = st.sampled_from(
    [
        "refund", "within", "30", "days", "exception:", "abuse.", "see", "[B](#b-terms)",
        "{{ site.email_support }}", "{% asset_path a.png %}", "*emphasis*", "`code`", "#hash",
        "ümlaut", "政策", "Çal\u0131şma", "&amp;", "<br>", "|", "-", ">", "1.", "a_b", "x" * 30,
    ]
)  # fmt: skip
LINE = st.lists(WORDS, min_size=1, max_size=12).map(" ".join)
PARAGRAPH = st.lists(LINE, min_size=1, max_size=4).map("\n".join)


def _heading(draw: st.DrawFn) -> str:
    title = draw(LINE)
    style = draw(st.sampled_from(["atx", "atx-closed", "setext1", "setext2"]))
    level = draw(st.integers(1, 6))
    if style == "atx":
        return f"{'#' * level} {title}"
    if style == "atx-closed":
        return f"{'#' * level} {title} {'#' * draw(st.integers(1, 3))}"
    underline = "====" if style == "setext1" else "----"
    return f"{title}\n{underline}"


@st.composite
def blocks(draw: st.DrawFn) -> str:
    kind = draw(
        st.sampled_from(
            ["heading", "heading", "paragraph", "list", "table", "fence", "html", "quote", "liquid"]
        )
    )
    if kind == "heading":
        return _heading(draw)
    if kind == "paragraph":
        return draw(PARAGRAPH)
    if kind == "list":
        items = draw(st.lists(st.tuples(st.integers(0, 4), LINE), min_size=1, max_size=8))
        marker = draw(st.sampled_from(["-", "*", "1."]))
        return "\n".join(f"{'  ' * depth}{marker} {text}" for depth, text in items)
    if kind == "table":
        rows = draw(st.lists(st.tuples(LINE, LINE), min_size=0, max_size=12))
        body = "".join(f"\n| {a} | {b} |" for a, b in rows)
        return f"| Plan | Rule |\n|---|---|{body}"
    if kind == "fence":
        lines = st.sampled_from(["# not a heading", "x = 1", "", "```py"])
        code = draw(st.lists(lines, max_size=5))
        closed = draw(st.booleans())
        return "```\n" + "\n".join(code) + ("\n```" if closed else "")
    if kind == "html":
        return f'<div class="note">\n{draw(LINE)}\n</div>'
    if kind == "quote":
        return "\n".join(f"> {line}" for line in draw(st.lists(LINE, min_size=1, max_size=3)))
    return f"{{% if site.eu %}}\n{draw(LINE)}\n{{% endif %}}"


@st.composite
def documents(draw: st.DrawFn) -> str:
    parts = draw(st.lists(blocks(), max_size=25))
    separators = st.sampled_from(["\n\n", "\n\n\n", "\r\n\r\n", "\n"])
    body = "".join(part + draw(separators) for part in parts)
    if draw(st.booleans()):
        body = f"---\ntitle: {draw(LINE)!r}\nlayout: sheet\n---\n" + body
    return body


POLICIES = st.builds(
    lambda low, extra: SizePolicy(min_tokens=low, max_tokens=max(1, low + extra)),
    st.integers(0, 60),
    st.integers(0, 80),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), POLICIES)
def test_generated_markdown_keeps_every_word_once_in_order_within_bounds(
    doc: str, policy: SizePolicy
) -> None:
    chunks = chunk_document("doc", 2, doc, policy=policy)
    assert problems(doc, chunks, policy) == []
    # every word of the body, in order, exactly once (front matter is metadata)
    body = doc.split("\n---\n", 1)[1] if doc.startswith("---\ntitle:") else doc
    words: list[str] = []
    for chunk in chunks:
        text = chunk.text
        if chunk.repeated_header is not None:
            text = text[len(chunk.repeated_header) + 1 :]
        words.extend(text.split())
    assert words == body.split()
    assert chunk_document("doc", 2, doc, policy=policy) == chunks
    # the typed model validates what the chunker builds, through JSON and back
    assert [Chunk.model_validate_json(c.model_dump_json()) for c in chunks] == chunks


@settings(max_examples=100, deadline=None)
@given(documents())
def test_every_chunk_keeps_its_heading_path_under_the_title(doc: str) -> None:
    chunks = chunk_document("doc", 1, doc, metadata={"title": "T"})
    for chunk in chunks:
        assert chunk.heading_path[0] == "T"
        assert chunk.embed_text.startswith(" > ".join(chunk.heading_path) + "\n")
