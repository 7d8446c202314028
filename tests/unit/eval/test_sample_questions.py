"""``examples/qa.jsonl``, the sample library's question set, is valid in the set's own terms.

The same rules as ``shared/eval``'s README: every evidence span is found exactly
once in its document (whitespace collapsed) and in no other, lies whole inside
one chunk of our chunker (else no hit is possible), and its heading is a
section of that document; unanswerable rows carry no document.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chunker import chunk_document
from retrieval.eval import load_rows
from sources.folder import content_type_for, document_id_for

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
ROWS = load_rows(EXAMPLES / "qa.jsonl")


def collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def library() -> dict[str, list[tuple[list[str], str]]]:
    """Document id -> its chunks as (heading path, collapsed text)."""
    docs = {}
    root = EXAMPLES / "library"
    for path in sorted(root.rglob("*")):
        if path.suffix not in {".md", ".html"}:
            continue
        relative = path.relative_to(root).as_posix()
        chunks = chunk_document(document_id_for(relative), 1, path.read_text(),
                                content_type=content_type_for(relative))
        docs[document_id_for(relative)] = [(c.heading_path, collapse(c.text)) for c in chunks]
    return docs


DOCS = library()


def test_the_set_has_answerable_unanswerable_and_two_profiles() -> None:
    assert sum(r.answerable for r in ROWS) >= 12
    assert sum(not r.answerable for r in ROWS) >= 3
    assert {r.profile for r in ROWS} == {"public", "agents"}
    assert len({r.id for r in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", [r for r in ROWS if r.answerable], ids=lambda r: r.id)
def test_evidence_is_in_one_chunk_of_its_document_only(row: object) -> None:
    from retrieval.eval import QaRow

    assert isinstance(row, QaRow) and row.evidence and row.document_id
    evidence = collapse(row.evidence)
    assert 40 <= len(evidence) <= 220, len(evidence)
    holders = [(doc, path) for doc, chunks in DOCS.items() for path, text in chunks
               if evidence in text]
    assert len(holders) == 1, holders
    doc, heading_path = holders[0]
    assert doc == row.document_id
    assert heading_path[-1] == row.heading or row.heading in heading_path, heading_path


def test_the_file_is_json_lines_in_the_shared_format() -> None:
    keys = {"id", "question", "document_id", "evidence", "heading", "kind", "profile"}
    for line in (EXAMPLES / "qa.jsonl").read_text().splitlines():
        assert set(json.loads(line)) == keys
