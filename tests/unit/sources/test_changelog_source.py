"""The change-log source folds the log to each document's last change."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sources.changelog import ChangeLogSource
from sources.errors import DocumentNotFoundError, SourceDataError, SourceUnavailableError


def line(seq: int, doc: str, action: str, version: int, at: str = "2024-01-01T00:00:00Z",
         *, content: str | None = "# T\n\nbody") -> str:
    record: dict[str, object] = {"seq": seq, "document_id": doc, "path": f"{doc}.md",
                                 "action": action, "version": version, "changed_at": at,
                                 "commit": "abc"}
    if action == "upsert":
        record["content"] = content
    return json.dumps(record)


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


LOG = [
    line(1, "refund", "upsert", 1, "2024-01-01T00:00:00Z", content="# Refund v1"),
    line(2, "terms", "upsert", 1, "2024-01-02T00:00:00Z"),
    line(3, "refund", "upsert", 2, "2024-01-03T00:00:00Z", content="# Refund v2"),
    line(4, "terms", "delete", 2, "2024-01-04T00:00:00Z"),
    line(5, "old", "upsert", 1, "2024-01-05T00:00:00Z"),
]


def test_listing_is_the_last_change_of_each_document(tmp_path: Path) -> None:
    source = ChangeLogSource(write(tmp_path / "log.jsonl", LOG))
    entries = {e.document_id: e for e in source.list_documents()}
    assert set(entries) == {"refund", "terms", "old"}
    assert entries["refund"].version == 2 and not entries["refund"].deleted
    assert entries["refund"].changed_at == datetime(2024, 1, 3, tzinfo=UTC)
    assert entries["terms"].deleted and entries["terms"].version == 2


def test_get_document_returns_the_current_content(tmp_path: Path) -> None:
    source = ChangeLogSource(write(tmp_path / "log.jsonl", LOG))
    doc = source.get_document("refund")
    assert (doc.version, doc.content) == (2, "# Refund v2")
    assert doc.metadata.source_path == "refund.md"
    with pytest.raises(DocumentNotFoundError, match="terms"):
        source.get_document("terms")  # deleted at the source
    with pytest.raises(DocumentNotFoundError, match="nope"):
        source.get_document("nope")


def test_until_seq_stops_the_fold(tmp_path: Path) -> None:
    source = ChangeLogSource(write(tmp_path / "log.jsonl", LOG), until_seq=2)
    entries = {e.document_id: e for e in source.list_documents()}
    assert {k: v.version for k, v in entries.items()} == {"refund": 1, "terms": 1}


def test_appended_changes_are_seen_on_the_next_listing(tmp_path: Path) -> None:
    path = write(tmp_path / "log.jsonl", LOG)
    source = ChangeLogSource(path)
    assert {e.document_id for e in source.list_documents()} == {"refund", "terms", "old"}
    with path.open("a", encoding="utf-8") as f:
        f.write(line(6, "old", "upsert", 2, content="# Old v2") + "\n")
    assert {e.document_id: e.version for e in source.list_documents()}["old"] == 2
    assert source.get_document("old").content == "# Old v2"


def test_gzip_logs_are_read(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(LOG) + "\n")
    assert len(list(ChangeLogSource(path).list_documents())) == 3


def test_a_missing_file_is_unavailable_not_empty(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailableError, match=r"missing\.jsonl"):
        list(ChangeLogSource(tmp_path / "missing.jsonl").list_documents())


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected an object"),
        (line(9, "x", "rename", 1), "action 'rename'"),
        (line(9, "x", "upsert", 0), "version 0"),
        (line(9, "x", "upsert", 1, at="2024-01-01T00:00:00"), "no time zone"),
        (line(9, "x", "upsert", 1, at="yesterday"), "not ISO 8601"),
        (json.dumps({"seq": 9, "action": "delete", "version": 1}), "document_id"),
    ],
)
def test_a_bad_line_is_a_data_error_naming_the_line(
    tmp_path: Path, bad: str, message: str
) -> None:
    source = ChangeLogSource(write(tmp_path / "log.jsonl", [*LOG, bad]))
    with pytest.raises(SourceDataError, match=message) as info:
        list(source.list_documents())
    assert "log.jsonl:6" in str(info.value)


@pytest.mark.corpus
def test_the_basecamp_corpus_folds_to_its_documented_state(corpora_dir: Path) -> None:
    source = ChangeLogSource(corpora_dir / "basecamp-policies.jsonl")
    entries = list(source.list_documents())
    assert len(entries) == 39
    live = [e for e in entries if not e.deleted]
    assert len(live) == 26
    first = live[0]
    assert source.get_document(first.document_id).version == first.version
