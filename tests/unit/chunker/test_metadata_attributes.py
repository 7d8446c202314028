"""Front matter beyond the known fields travels as attributes; the language is on every chunk."""

from __future__ import annotations

import pytest

from chunker import chunk_document
from chunker.errors import InvalidFrontMatter, InvalidMetadata
from chunker.metadata import MAX_ATTRIBUTES_BYTES, merge_metadata, parse_front_matter


def test_unknown_front_matter_keys_become_json_attributes() -> None:
    doc = (
        "---\ntitle: Returns\ncode: POL-RET-004\npricing: {percent: 50, min_inr: 40}\n"
        "reviewed: 2026-03-01\nkeywords: wet, soggy\n---\n## Rule\nMoney back.\n"
    )
    (chunk,) = chunk_document("returns", 1, doc)
    assert chunk.metadata.attributes == {
        "code": "POL-RET-004",
        "pricing": {"percent": 50, "min_inr": 40},
        "reviewed": "2026-03-01",
    }
    assert chunk.metadata.keywords == ["wet", "soggy"]


def test_attributes_larger_than_the_bound_are_refused_naming_the_key() -> None:
    big = "x" * (MAX_ATTRIBUTES_BYTES + 10)
    with pytest.raises(InvalidFrontMatter, match=r"'notes'"):
        parse_front_matter(f"code: A\nnotes: {big}\n")


def test_event_attributes_are_bounded_too() -> None:
    with pytest.raises(InvalidMetadata, match="attributes"):
        merge_metadata({}, {"attributes": {"a": ["y" * 100] * 100}})


@pytest.mark.parametrize(
    ("front", "path", "expected"),
    [
        ("lang: de-DE\n", "x", "de"),
        ("language: FR\n", "x", "fr"),
        ("", "legal/de/terms", "de"),
        ("", "docs/privacy_policy/pt-BR", "pt"),
        ("", "cities/lisbon/index", "en"),  # no locale segment: detected from the text
    ],
)
def test_language_declared_else_from_the_path_else_detected(
    front: str, path: str, expected: str
) -> None:
    doc = f"---\n{front}title: T\n---\n## Rule\nA rider gets the money back within five days.\n"
    (chunk,) = chunk_document(path, 1, doc)
    assert chunk.metadata.language == expected


def test_a_bad_language_tag_names_the_key() -> None:
    with pytest.raises(InvalidFrontMatter, match="lang"):
        parse_front_matter("lang: 'not a tag!'\n")


def test_too_little_text_to_detect_leaves_the_language_unknown() -> None:
    (chunk,) = chunk_document("x", 1, "## A\nok\n")
    assert chunk.metadata.language is None
