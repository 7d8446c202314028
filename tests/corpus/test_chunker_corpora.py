"""Every version of every document of both real corpora: lossless, bounded, consistent.

Reads ``../shared/corpora`` beside the repository (skipped, with the reason,
where it is absent). Each upsert is chunked and checked with
``chunker.invariants.problems``: spans in order, nothing but whitespace
between chunks, text equal to its span, token counts within the maximum
(or flagged unsplittable), ids, links and embed text consistent.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunker import ChunkerError, SizePolicy, chunk_document
from chunker.invariants import problems
from chunker.markdown import parse_markdown
from chunker.scan import expand_regions, scan_markdown

pytestmark = pytest.mark.corpus

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"
POLICY = SizePolicy()


def _upserts(name: str) -> Iterator[dict[str, object]]:
    path = CORPORA / name
    if not path.exists():
        pytest.skip(f"corpus {path} is not on this machine")
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            if event["action"] == "upsert":
                yield event


@pytest.mark.parametrize(
    ("name", "upserts"),
    [("basecamp-policies.jsonl", 326), ("mozilla-legal-docs.jsonl.gz", 6850)],
)
def test_every_version_of_every_document_chunks_losslessly(name: str, upserts: int) -> None:
    seen = 0
    failures: list[str] = []
    chunks_total = 0
    for event in _upserts(name):
        seen += 1
        content = str(event["content"])
        where = f"{event['document_id']} v{event['version']}"
        try:
            chunks = chunk_document(str(event["document_id"]), int(str(event["version"])), content)
        except ChunkerError as exc:
            failures.append(f"{where}: {exc}")
            continue
        chunks_total += len(chunks)
        if content.strip() and not chunks:
            failures.append(f"{where}: a non-empty document gave no chunks")
        failures.extend(f"{where}: {problem}" for problem in problems(content, chunks, POLICY))
        if len(failures) > 20:
            break
    assert failures == []
    assert seen == upserts
    assert chunks_total > seen


@pytest.mark.parametrize("name", ["basecamp-policies.jsonl", "mozilla-legal-docs.jsonl.gz"])
def test_the_line_scanner_finds_markdown_its_blocks_in_every_version(name: str) -> None:
    """The fast path (``chunker.scan``) against a full markdown-it parse, version by version.

    Where the scanner answers, its blocks (regions expanded) must be
    markdown-it's, and it must answer for nearly every document: a scanner
    that gave up everywhere would be correct but would lose the speed it is for.
    """
    answered = deferred = 0
    failures: list[str] = []
    for event in _upserts(name):
        text = str(event["content"])
        fast = scan_markdown(text)
        if fast is None:
            deferred += 1
            continue
        answered += 1
        full = parse_markdown(text)
        if (fast.front_matter, fast.body_start, expand_regions(text, fast.blocks)) != (
            full.front_matter,
            full.body_start,
            full.blocks,
        ):
            failures.append(f"{event['document_id']} v{event['version']}")
    assert failures == []
    assert deferred <= 0.01 * (answered + deferred), f"{deferred} documents left to markdown-it"
