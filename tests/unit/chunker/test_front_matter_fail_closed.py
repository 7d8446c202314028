"""Front-matter slips fail closed, alias bombs are refused short.

A slip in the permission labels (``access_label``, an empty or null ``access_labels``)
used to leave the chunks unlabelled, visible to everyone; now ``chunk_document``
raises ``InvalidFrontMatter`` naming the key, so the worker dead-letters the version
and nothing of it is written. A YAML alias bomb of a few hundred bytes used to expand
into a 35 MB error message; now it is refused before any value is built, with a
message of at most a few hundred characters.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from chunker import chunk_document
from chunker.errors import MAX_QUOTED_CHARS, InvalidFrontMatter, quote
from chunker.metadata import parse_front_matter
from sources.base import UnreadableKind, parse_changed_at, parse_version
from sources.errors import SourceDataError
from sources.folder import MarkdownFolderSource

BODY = "## Who can ask\nRiders within 30 days.\n"

SLIPS = [  # (front matter line, key the error must name)
    ("access_label: [staff]", "access_label"),
    ("labels: [staff]", "labels"),
    ("accesslabels: [staff]", "accesslabels"),
    ("Access_Label: staff", "Access_Label"),
    ("access_labels:", "access_labels"),
    ('access_labels: ""', "access_labels"),
    ("access_labels: ' , '", "access_labels"),
    ("access_labels: null", "access_labels"),
    ("access_labels: []", "access_labels"),
    ("access_labels: [null]", "access_labels"),
    ("access_labels: [staff, null]", "access_labels"),
    ("access_labels: [7]", "access_labels"),
    ("access_labels: ['']", "access_labels"),
    ("access_labels: {staff: true}", "access_labels"),
    ("valid_until: 2026-12-31", "valid_until"),
    ("validto: 2026-12-31", "validto"),
    ("effective: 2026-01-01", "effective"),
    ("valid-until: 2026-12-31", "valid-until"),
]


@pytest.mark.parametrize(("line", "key"), SLIPS)
def test_a_front_matter_slip_keeps_the_document_out_naming_the_key(line: str, key: str) -> None:
    content = f"---\ntitle: Refunds\n{line}\n---\n{BODY}"
    with pytest.raises(InvalidFrontMatter) as raised:
        chunk_document("refunds", 3, content)
    assert repr(key) in str(raised.value)


@pytest.mark.parametrize("line", ["access_labels: [staff]", "access-labels: staff",
                                  "ACCESS_LABELS: staff, agents", "layout: post\n"
                                  "access_labels: [public]"])
def test_labels_written_right_are_on_every_chunk(line: str) -> None:
    chunks = chunk_document("refunds", 3, f"---\n{line}\n---\n{BODY}")
    assert chunks and all(c.metadata.access_labels for c in chunks)


def test_unrelated_keys_are_still_attributes() -> None:
    fields = parse_front_matter("layout: post\ndescription: x\ncode: POL-1\n")
    assert fields["attributes"] == {"layout": "post", "description": "x", "code": "POL-1"}


def _bomb(key: str) -> str:
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n, name in enumerate("bcdef"):
        prev = "abcde"[n]
        levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    levels.append(f"{key}: [" + ",".join(["*f"] * 9) + "]")
    return "\n".join(levels) + "\n"


@pytest.mark.parametrize("key", ["version", "changed_at", "keywords", "title", "code"])
def test_an_alias_bomb_is_refused_quickly_and_shortly(key: str) -> None:
    bomb = _bomb(key)
    assert len(bomb) < 470
    started = time.monotonic()
    with pytest.raises(InvalidFrontMatter) as raised:
        chunk_document("refunds", 3, f"---\n{bomb}---\n{BODY}")
    assert time.monotonic() - started < 1.0
    message = str(raised.value)
    assert len(message) <= 300 and repr(key) in message


@pytest.mark.parametrize(("key", "parse"), [("version", parse_version),
                                            ("changed_at", parse_changed_at)])
def test_the_source_quotes_a_bombed_value_in_at_most_200_characters(key, parse) -> None:  # type: ignore[no-untyped-def]
    import yaml

    value = yaml.safe_load(_bomb(key))[key]  # shared lists: 9^7 strings once expanded
    started = time.monotonic()
    with pytest.raises(SourceDataError) as raised:
        parse(value, "lib/refunds.md")
    assert time.monotonic() - started < 1.0
    assert len(str(raised.value)) <= 200 + 120 and key in str(raised.value)


@pytest.mark.parametrize("key", ["version", "changed_at"])
def test_a_folder_file_with_a_bomb_is_listed_unreadable_with_a_short_reason(
        tmp_path: Path, key: str) -> None:
    (tmp_path / "refunds.md").write_text(f"---\n{_bomb(key)}---\n{BODY}", encoding="utf-8")
    started = time.monotonic()
    [entry] = list(MarkdownFolderSource(tmp_path).list_documents())
    assert time.monotonic() - started < 2.0
    assert entry.unreadable is not None
    assert entry.unreadable.kind is UnreadableKind.FRONT_MATTER
    assert len(str(entry.unreadable)) <= 500 and key in str(entry.unreadable)


def test_quote_is_bounded_for_huge_values() -> None:
    assert len(quote("x" * 10_000_000)) <= MAX_QUOTED_CHARS
    assert len(quote(10 ** 20_000)) <= MAX_QUOTED_CHARS
    nested: list[object] = ["lol"] * 9
    for _ in range(7):
        nested = [nested] * 9
    assert len(quote(nested)) <= MAX_QUOTED_CHARS
    assert quote(datetime(2026, 1, 1, tzinfo=UTC)).startswith("datetime")
