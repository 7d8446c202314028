"""A folder of Markdown files as a source: ids, versions, change times, bad files."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sources.errors import DocumentNotFoundError, SourceDataError, SourceUnavailableError
from sources.folder import MarkdownFolderSource, document_id_for


def put(root: Path, relative: str, text: str, mtime: float | None = None) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


@pytest.mark.parametrize(
    ("relative", "expected"),
    [("refund/index.md", "refund"), ("terms/privacy.md", "terms/privacy"),
     ("index.md", "index"), ("a.md", "a")],
)
def test_document_ids_follow_the_corpus_rule(relative: str, expected: str) -> None:
    assert document_id_for(relative) == expected


def test_front_matter_gives_version_and_time_else_the_mtime(tmp_path: Path) -> None:
    put(tmp_path, "refund/index.md",
        "---\ntitle: Refund\nversion: 7\nchanged_at: 2024-05-01T10:00:00Z\n---\n# Refund\n")
    put(tmp_path, "terms.md", "# Terms\n", mtime=1_700_000_000.5)
    put(tmp_path, "notes.txt", "not markdown")
    put(tmp_path, ".git/HEAD.md", "hidden folders are skipped")
    source = MarkdownFolderSource(tmp_path)
    entries = {e.document_id: e for e in source.list_documents()}
    assert set(entries) == {"refund", "terms"}
    assert entries["refund"].version == 7
    assert entries["refund"].changed_at == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert entries["terms"].version == 1_700_000_000
    assert entries["terms"].changed_at == datetime.fromtimestamp(1_700_000_000.5, UTC)


def test_get_document_reads_the_file(tmp_path: Path) -> None:
    put(tmp_path, "refund/index.md", "---\nversion: 3\n---\n# Refund\n")
    doc = MarkdownFolderSource(tmp_path).get_document("refund")
    assert (doc.version, doc.metadata.source_path) == (3, "refund/index.md")
    assert doc.content.endswith("# Refund\n")


def test_ids_outside_the_root_or_missing_are_not_found(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    put(tmp_path, "secret.md", "outside")
    put(root, "a.md", "# A\n")
    source = MarkdownFolderSource(root)
    for document_id in ("../secret", "missing"):
        with pytest.raises(DocumentNotFoundError):
            source.get_document(document_id)


def test_two_files_with_one_id_list_the_first(tmp_path: Path) -> None:
    put(tmp_path, "refund.md", "# A\n", mtime=1_700_000_000)
    put(tmp_path, "refund/index.md", "# B\n", mtime=1_700_000_009)
    assert [(e.document_id, e.version) for e in
            MarkdownFolderSource(tmp_path).list_documents()] == [("refund", 1_700_000_000)]


@pytest.mark.parametrize(
    ("text", "message"),
    [("---\nversion: [1\n---\n", "not valid YAML"),
     ("---\nversion: two\n---\n", "version 'two'"),
     ("---\nversion: 2\nchanged_at: 2024-05-01 10:00:00\n---\n", "no time zone")],
)
def test_bad_front_matter_names_the_file(tmp_path: Path, text: str, message: str) -> None:
    put(tmp_path, "bad.md", text)
    [entry] = MarkdownFolderSource(tmp_path).list_documents()
    assert entry.unreadable is not None and entry.unreadable.kind.value == "front_matter"
    assert message in entry.unreadable.detail and "bad.md" in entry.unreadable.detail
    with pytest.raises(SourceDataError, match=message) as info:
        MarkdownFolderSource(tmp_path).get_document("bad")
    assert "bad.md" in str(info.value)


def test_not_utf8_is_a_data_error(tmp_path: Path) -> None:
    (tmp_path / "latin.md").write_bytes(b"caf\xe9")
    [entry] = MarkdownFolderSource(tmp_path).list_documents()
    assert entry.unreadable is not None and "not UTF-8" in str(entry.unreadable)
    with pytest.raises(SourceDataError, match="not UTF-8"):
        MarkdownFolderSource(tmp_path).get_document("latin")


def test_a_missing_folder_is_unavailable_not_empty(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailableError, match="gone"):
        list(MarkdownFolderSource(tmp_path / "gone").list_documents())


@pytest.mark.parametrize(
    ("relative", "expected"),
    [("help/index.html", "help"), ("help/contact.html", "help/contact"), ("faq.htm", "faq")],
)
def test_html_document_ids_follow_the_same_rule(relative: str, expected: str) -> None:
    assert document_id_for(relative) == expected


def test_html_files_are_listed_and_read_as_html(tmp_path: Path) -> None:
    put(tmp_path, "help/index.html", "<title>Help</title><h2>Hours</h2>", mtime=1_700_000_000)
    put(tmp_path, "refunds.md", "## Refunds\n", mtime=1_700_000_001)
    put(tmp_path, "notes.txt", "not a document")
    source = MarkdownFolderSource(tmp_path)
    assert {e.document_id: e.version for e in source.list_documents()} == {
        "help": 1_700_000_000, "refunds": 1_700_000_001,
    }
    doc = source.get_document("help")
    assert (doc.content_type, doc.metadata.source_path) == ("text/html", "help/index.html")
    assert source.get_document("refunds").content_type == "text/markdown"


def test_an_html_files_meta_tags_are_its_metadata(tmp_path: Path) -> None:
    put(tmp_path, "help.html",
        '<html><head><title>Help</title><meta name="Access-Labels" content="agents, staff">'
        '<meta name="valid_to" content="2027-04-30"><meta name="description" content="x">'
        '</head><body><meta name="scope" content="not read: in the body"><h2>Hours</h2>')
    meta = MarkdownFolderSource(tmp_path).get_document("help").metadata
    assert meta.access_labels == ["agents", "staff"]
    assert meta.valid_to is not None and meta.valid_to.isoformat() == "2027-04-30"
    assert (meta.scope, meta.source_path) == (None, "help.html")


def test_a_bad_meta_date_names_the_file_and_the_tag(tmp_path: Path) -> None:
    put(tmp_path, "help.html", '<head><meta name="valid_from" content="next spring"></head>')
    with pytest.raises(SourceDataError, match=r"help\.html.*valid_from.*next spring"):
        MarkdownFolderSource(tmp_path).get_document("help")
