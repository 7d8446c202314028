"""Hidden names, hard links, bad names and unlistable folders at the folder source: what
is never read, and what is named.

- a symbolic link to a file under a hidden name (``gitconfig.md -> .git/config``
  with a token in the remote URL, ``dotenv.md -> .env``) is listed unreadable
  (``hidden``, naming the component), never read; the allow-list reads it;
- a file with two hard links (``ln outside/passwd lib/x.md``) is listed
  unreadable (``hard_link``), unless allowed;
- a name that is not UTF-8 is listed unreadable (``name``) under an escaped,
  bounded id, never read;
- a sub-folder the process may not list is one ``unlistable`` entry, the rest is
  listed; only an unlistable root fails the listing (in a child without
  CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH: the tests run as root);
- the Git source skips paths through a hidden name the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sources.base import SourceEntry
from sources.folder import MAX_SHOWN_NAME, MarkdownFolderSource, UnreadableFileError
from sources.git import GitSource
from sources.hidden import parse_hidden_allow

GOOD = {"refunds": "## Refunds\nWithin 30 days.\n", "help/contact": "## Contact\nMail us.\n"}
TOKEN = "ghp_SECRETTOKEN0123456789"


def library(root: Path) -> Path:
    for document_id, text in GOOD.items():
        path = root / f"{document_id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def listed(root: Path, **options: object) -> dict[str, SourceEntry]:
    entries = list(MarkdownFolderSource(root, **options).list_documents())  # type: ignore[arg-type]
    by_id = {e.document_id: e for e in entries}
    assert len(by_id) == len(entries)
    return by_id


def reason_of(entries: dict[str, SourceEntry], document_id: str) -> tuple[str, str]:
    reason = entries[document_id].unreadable
    assert reason is not None, entries[document_id]
    return reason.kind.value, reason.detail


def assert_good_listed(entries: dict[str, SourceEntry]) -> None:
    for document_id in GOOD:
        assert entries[document_id].unreadable is None, entries[document_id]


def test_links_into_hidden_names_are_refused_with_the_component_named(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f'[remote "origin"]\nurl = https://{TOKEN}@x/y\n')
    (root / ".env").write_text(f"API_TOKEN={TOKEN}\n")
    (root / "notes" / ".drafts").mkdir(parents=True)
    (root / "notes" / ".drafts" / "d.md").write_text(f"## Draft\n{TOKEN}\n")
    os.symlink(".git/config", root / "gitconfig.md")
    os.symlink(".env", root / "dotenv.md")
    os.symlink(".drafts/d.md", root / "notes" / "draft.md")
    entries = listed(root)
    assert_good_listed(entries)
    assert set(entries) == set(GOOD) | {"gitconfig", "dotenv", "notes/draft"}  # .drafts not walked
    assert reason_of(entries, "gitconfig")[0] == "hidden"
    assert "hidden path component '.git'" in reason_of(entries, "gitconfig")[1]
    assert "hidden path component '.env'" in reason_of(entries, "dotenv")[1]
    assert "hidden path component '.drafts'" in reason_of(entries, "notes/draft")[1]
    source = MarkdownFolderSource(root)
    for document_id in ("gitconfig", "dotenv", "notes/draft"):
        with pytest.raises(UnreadableFileError, match="hidden path component"):
            source.get_document(document_id)
    assert not source.holds(".git/config") and not source.holds("notes/.drafts/d")
    assert all(TOKEN not in e.unreadable.detail for e in entries.values() if e.unreadable)


def test_the_allow_list_reads_the_hidden_names_it_names(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    (root / ".well-known").mkdir()
    (root / ".well-known" / "security.md").write_text("## Security\nReport to us.\n")
    os.symlink(".well-known/security.md", root / "security.md")
    (root / ".env").write_text(f"API_TOKEN={TOKEN}\n")
    os.symlink(".env", root / "dotenv.md")
    entries = listed(root, hidden_allow=".well-known")
    assert entries[".well-known/security"].unreadable is None
    assert entries["security"].unreadable is None
    assert reason_of(entries, "dotenv")[0] == "hidden"
    source = MarkdownFolderSource(root, hidden_allow=[".well-known"])
    assert source.get_document("security").content.startswith("## Security")
    assert ".well-known/security" not in listed(root)  # not allowed: not listed at all


@pytest.mark.parametrize("bad", ["well-known", ".", "..", ".a/b", ""])
def test_a_bad_allow_list_entry_is_refused(bad: str) -> None:
    if bad == "":
        assert parse_hidden_allow(" , ") == frozenset()
        return
    with pytest.raises(ValueError, match="must be one name starting with"):
        parse_hidden_allow(bad)


def test_a_hard_link_is_refused_unless_allowed(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    outside = tmp_path / "etc-passwd"
    outside.write_text("root:x:0:0:root:/root:/bin/bash\n")
    os.link(outside, root / "x.md")
    entries = listed(root)
    assert_good_listed(entries)
    kind, detail = reason_of(entries, "x")
    assert kind == "hard_link" and "hard link (2 links)" in detail, detail
    with pytest.raises(UnreadableFileError, match="hard link"):
        MarkdownFolderSource(root).get_document("x")
    assert listed(root, allow_hard_links=True)["x"].unreadable is None


def test_a_file_hard_linked_after_the_listing_is_refused_at_the_read(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    source = MarkdownFolderSource(root)
    found = source.inspect("refunds.md", root / "refunds.md")
    assert found is not None and found.unreadable is None
    os.link(root / "refunds.md", tmp_path / "elsewhere")
    with pytest.raises(UnreadableFileError, match="hard link"):
        source.read_text(found)


def make_bytes_name(folder: Path, name: bytes, text: bytes = b"## Caf\n") -> None:
    fd = os.open(os.fsencode(folder) + b"/" + name, os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, text)
    os.close(fd)


def test_a_name_that_is_not_utf8_is_listed_escaped_and_never_read(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    make_bytes_name(root, b"caf\xe9.md")
    os.mkdir(os.fsencode(root) + b"/r\xe8gles")
    make_bytes_name(Path(os.fsdecode(os.fsencode(root) + b"/r\xe8gles")), b"a.md")
    make_bytes_name(root, b"\xff" * 200 + b".md")
    entries = listed(root)
    assert_good_listed(entries)
    assert reason_of(entries, "caf\\xe9") == (
        "name", f"{root}/caf\\xe9.md: name not UTF-8 (shown escaped): not read; rename the file")
    assert reason_of(entries, "r\\xe8gles/a")[0] == "name"
    long_ids = [d for d in entries if d.startswith("\\xff")]
    assert len(long_ids) == 1 and len(long_ids[0]) <= MAX_SHOWN_NAME + 3
    for entry in entries.values():  # every id and reason can be written as UTF-8
        entry.document_id.encode("utf-8")
        if entry.unreadable is not None:
            entry.unreadable.detail.encode("utf-8")
    assert not MarkdownFolderSource(root).holds("caf\\xe9")


_LIST_AS_CHILD = """
import json, sys
from sources.folder import MarkdownFolderSource
from sources.errors import SourceUnavailableError
out = {}
try:
    for e in MarkdownFolderSource(sys.argv[1]).list_documents():
        bad = e.unreadable
        out[e.document_id] = None if bad is None else [bad.kind.value, bad.detail]
except SourceUnavailableError as exc:
    out = {"failed": str(exc)}
print(json.dumps(out))
"""


def list_without_dac_override(root: Path) -> dict[str, object]:
    """The listing in a child that is uid 0 without root's read-anything capabilities."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("setpriv (util-linux) is missing: the unlistable cases need it")
    caps = "-dac_override,-dac_read_search"
    done = subprocess.run(
        [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}",
         sys.executable, "-c", _LIST_AS_CHILD, str(root)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_an_unlistable_sub_folder_is_one_entry_and_the_rest_is_listed(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    (root / "private").mkdir()
    (root / "private" / "salaries.md").write_text("## Salaries\n")
    (root / "private").chmod(0o000)
    try:
        entries = list_without_dac_override(root)
    finally:
        (root / "private").chmod(0o755)
    assert set(entries) == set(GOOD) | {"private/"}, entries
    assert all(entries[d] is None for d in GOOD)
    assert entries["private/"] == [
        "unlistable", f"{root}/private: cannot list the folder: Permission denied; the "
        "documents under it are kept as they were until it can be listed"]


def test_an_unlistable_root_still_fails_the_listing(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    root.chmod(0o000)
    try:
        result = list_without_dac_override(root)
    finally:
        root.chmod(0o755)
    assert "failed" in result and "cannot list" in str(result["failed"]), result


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_the_git_source_skips_paths_through_hidden_names(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    for relative in ("refunds.md", ".github/pull_request_template.md", "docs/.drafts/next.md",
                     ".well-known/security.md", "docs/terms.md"):
        (repo / relative).parent.mkdir(parents=True, exist_ok=True)
        (repo / relative).write_text(f"## {relative}\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "library")
    ids = {e.document_id for e in GitSource(str(repo), tmp_path / "mirror").list_documents()}
    assert ids == {"refunds", "docs/terms"}
    allowed = GitSource(str(repo), tmp_path / "mirror2", hidden_allow=".well-known")
    assert {e.document_id for e in allowed.list_documents()} == {
        "refunds", "docs/terms", ".well-known/security"}
