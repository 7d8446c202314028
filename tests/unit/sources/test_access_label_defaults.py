"""An ``access_labels`` default per folder of the library, and the folder's
front matter read with the bounded YAML loader.

- a file under ``hr/`` whose front matter sets no ``access_labels`` gets the rule's
  labels in its event metadata, so its chunks carry them; a file that sets its own
  keeps them; a path no rule matches gets none;
- the fail-closed rules stay: an empty ``access_labels:``, ``access_labels: []`` or a
  near-miss ``access_label:`` under a defaulted folder is still refused by the chunker;
- bad rules (no ``=``, an empty, absolute or ``..`` pattern, no labels, a label with a
  control character) are refused with the rule named, by the parser and the settings;
- a folder file whose front matter is an alias bomb under an unrelated key is listed
  ``front_matter`` unreadable at once (the plain loader listed it readable and sent it on).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from chunker.document import chunk_document
from chunker.errors import InvalidFrontMatter
from policy_indexer.settings import Settings
from sources.base import UnreadableKind
from sources.config import SourceConfig, open_source
from sources.folder import MarkdownFolderSource
from sources.label_defaults import parse_label_defaults

RULES = "hr/**=staff,hr; internal/=staff; *.htm=web; **/drafts/*.md=editors"
BODY = "## Pay bands\nThe staff pay bands are reviewed in March.\n"


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def labels_of(source: MarkdownFolderSource, document_id: str) -> list[str] | None:
    return source.get_document(document_id).metadata.access_labels


def chunk_labels(source: MarkdownFolderSource, document_id: str) -> set[tuple[str, ...]]:
    """The labels of the document's chunks, as the worker would make them from its event."""
    doc = source.get_document(document_id)
    chunks = chunk_document(document_id, doc.version, doc.content,
                            content_type=doc.content_type, metadata=doc.metadata.overrides())
    assert chunks
    return {tuple(sorted(c.metadata.access_labels)) for c in chunks}


@pytest.mark.parametrize(("relative", "expected"), [
    ("hr/pay.md", ["staff", "hr"]),
    ("hr/2026/bands/pay.md", ["staff", "hr"]),
    ("internal/tools.md", ["staff"]),
    ("internal/a/b.md", ["staff"]),
    ("index.htm", ["web"]),
    ("guides/drafts/x.md", ["editors"]),
    ("drafts/x.md", ["editors"]),
    ("refunds.md", None),
    ("hrx/pay.md", None),
    ("guides/index.htm", None),
    ("guides/drafts/deeper/x.md", None),
])
def test_the_first_matching_rule_gives_the_labels(relative: str, expected: object) -> None:
    assert parse_label_defaults(RULES).labels_for(relative) == expected


def test_rules_are_tried_in_order() -> None:
    rules = parse_label_defaults("hr/public/*=public; hr/**=staff; **=everyone")
    assert rules.labels_for("hr/public/holidays.md") == ["public"]
    assert rules.labels_for("hr/pay.md") == ["staff"]
    assert rules.labels_for("refunds.md") == ["everyone"]
    assert parse_label_defaults({"hr/**": ["staff"]}).labels_for("hr/x.md") == ["staff"]
    assert not parse_label_defaults("") and not parse_label_defaults(" ; \n")


@pytest.mark.parametrize(("rule", "named"), [
    ("hr/**", "'hr/**'"),
    ("=staff", "empty pattern"),
    ("/hr/**=staff", "no leading '/'"),
    ("../hr/**=staff", "'..'"),
    ("hr//x=staff", "segment"),
    ("hr/**=", "no labels"),
    ("hr/**= , ", "no labels"),
    ("hr/**=st\x01aff", "control character"),
])
def test_a_bad_rule_is_refused_naming_it(rule: str, named: str) -> None:
    with pytest.raises(ValueError, match=r"access_labels rule|pattern") as raised:
        parse_label_defaults(rule)
    assert named in str(raised.value)
    with pytest.raises(ValidationError):
        Settings(source_default_access_labels=rule)
    with pytest.raises(ValidationError):
        SourceConfig(kind="folder", path=Path("/tmp"), default_access_labels=rule)


def test_a_file_without_labels_under_a_defaulted_folder_gets_them(tmp_path: Path) -> None:
    write(tmp_path, "hr/pay.md", f"---\ntitle: Pay\nversion: 2\n---\n{BODY}")
    write(tmp_path, "hr/own.md", f"---\naccess_labels: [managers]\n---\n{BODY}")
    write(tmp_path, "hr/dashed.md", f"---\nAccess-Labels: managers\n---\n{BODY}")
    write(tmp_path, "refunds.md", f"---\ntitle: Refunds\n---\n{BODY}")
    write(tmp_path, "internal/plain.md", BODY)  # no front matter at all
    write(tmp_path, "index.htm", f"<html><head><title>Home</title></head><body>{BODY}</body>")
    write(tmp_path, "internal/page.html",
          '<html><head><meta name="access_labels" content="it"></head><body>x</body></html>')
    source = open_source(SourceConfig(kind="folder", path=tmp_path,
                                      default_access_labels=RULES))
    assert isinstance(source, MarkdownFolderSource)

    assert labels_of(source, "hr/pay") == ["staff", "hr"]
    assert chunk_labels(source, "hr/pay") == {("hr", "staff")}
    assert labels_of(source, "internal/plain") == ["staff"]
    assert chunk_labels(source, "internal/plain") == {("staff",)}
    assert labels_of(source, "index") == ["web"]
    # its own labels: the default stays out of the event, the front matter's are used
    assert labels_of(source, "hr/own") is None
    assert chunk_labels(source, "hr/own") == {("managers",)}
    assert labels_of(source, "hr/dashed") is None
    assert chunk_labels(source, "hr/dashed") == {("managers",)}
    assert source.get_document("internal/page").metadata.access_labels == ["it"]
    # no rule matches: nothing added (unlabelled, as before)
    assert labels_of(source, "refunds") is None
    assert chunk_labels(source, "refunds") == {()}
    # the listing is unchanged by the default
    assert all(e.unreadable is None for e in source.list_documents())


@pytest.mark.parametrize("line", ["access_labels:", "access_labels: []", 'access_labels: ""',
                                  "access_labels: [null]", "access_label: [public]",
                                  "labels: public"])
def test_a_slip_under_a_defaulted_folder_is_still_refused(tmp_path: Path, line: str) -> None:
    write(tmp_path, "hr/pay.md", f"---\ntitle: Pay\n{line}\n---\n{BODY}")
    source = MarkdownFolderSource(tmp_path, default_access_labels="**=staff")
    doc = source.get_document("hr/pay")
    with pytest.raises(InvalidFrontMatter, match=r"access_label|labels"):
        chunk_document("hr/pay", doc.version, doc.content, metadata=doc.metadata.overrides())


def _bomb(key: str) -> str:
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n, name in enumerate("bcdef"):
        levels.append(f"{name}: &{name} [" + ",".join([f"*{'abcde'[n]}"] * 9) + "]")
    levels.append(f"{key}: [" + ",".join(["*f"] * 9) + "]")
    return "\n".join(levels) + "\n"


@pytest.mark.parametrize("key", ["code", "layout"])
def test_an_alias_bomb_under_any_key_is_refused_by_the_source(tmp_path: Path, key: str) -> None:
    write(tmp_path, "refunds.md", f"---\nversion: 3\n{_bomb(key)}---\n{BODY}")
    write(tmp_path, "fine.md", f"---\nversion: 3\n---\n{BODY}")
    started = time.monotonic()
    entries = {e.document_id: e for e in MarkdownFolderSource(tmp_path).list_documents()}
    assert time.monotonic() - started < 1.0
    assert entries["fine"].unreadable is None
    reason = entries["refunds"].unreadable
    assert reason is not None and reason.kind is UnreadableKind.FRONT_MATTER, entries
    assert "alias bomb" in reason.detail and repr(key) in reason.detail
    assert len(str(reason)) <= 400
