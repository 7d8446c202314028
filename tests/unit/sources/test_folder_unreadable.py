"""A bad file is that file's problem only: the folder listing names it and lists the rest.

The bad files: a symbolic link loop, a file the process may
not read, invalid UTF-8, a binary file, bad YAML front matter, a FIFO named
``*.md``, a too-large file, a symbolic link leaving the root. Each is listed as
``unreadable`` with its reason and never blocks or fails the listing.

The tests run as root, and root reads a mode-000 file; the permission case runs
the listing in a child process under ``setpriv`` with CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH dropped, so uid 0 gets the kernel's EACCES like any user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from sources.base import SourceEntry, UnreadableKind
from sources.folder import MarkdownFolderSource, UnreadableFileError

GOOD = {f"good{i}": f"---\nversion: {i + 1}\n---\n## Rule {i}\nText {i}.\n" for i in range(3)}


def library(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for document_id, text in GOOD.items():
        (root / f"{document_id}.md").write_text(text, encoding="utf-8")
    return root


def listed(root: Path, max_file_bytes: int = 1 << 20) -> dict[str, SourceEntry]:
    entries = list(MarkdownFolderSource(root, max_file_bytes=max_file_bytes).list_documents())
    by_id = {e.document_id: e for e in entries}
    assert len(by_id) == len(entries)
    return by_id


def within(seconds: float, call: Callable[[], object]) -> object:
    """``call()`` in a thread; fails the test (not hangs it) if it has not returned in time."""
    result: list[object] = []
    raised: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # handed to the test's thread
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still blocked after {seconds} s (a FIFO opened?)")
    if raised:
        raise raised[0]
    return result[0]


def assert_only_bad(entries: dict[str, SourceEntry], bad: str, kind: UnreadableKind) -> None:
    assert set(entries) == set(GOOD) | {bad}
    for document_id in GOOD:
        assert entries[document_id].unreadable is None
        assert entries[document_id].version == int(document_id[-1]) + 1
    reason = entries[bad].unreadable
    assert reason is not None, entries[bad]
    assert reason.kind is kind, reason
    assert f"{bad}.md" in reason.detail
    assert entries[bad].version == 0


def test_a_symlink_loop_is_listed_unreadable_and_the_rest_is_listed(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    os.symlink("selfloop.md", root / "selfloop.md")
    assert_only_bad(listed(root), "selfloop", UnreadableKind.SYMLINK_LOOP)
    with pytest.raises(UnreadableFileError, match="loop"):
        MarkdownFolderSource(root).get_document("selfloop")


@pytest.mark.parametrize(
    ("content", "kind", "words"),
    [(b"## Caf\xe9\n", UnreadableKind.ENCODING, "not UTF-8"),
     (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", UnreadableKind.BINARY, "NUL"),
     (b"## Header\n\x00\x00\x00 binary\n", UnreadableKind.BINARY, "NUL"),
     (b"---\ntitle: [unclosed\n---\n## Y\n", UnreadableKind.FRONT_MATTER, "not valid YAML"),
     (b"---\nversion: two\n---\n## Y\n", UnreadableKind.FRONT_MATTER, "version 'two'")],
    ids=["latin1", "png", "nul", "yaml", "version"],
)
def test_a_file_that_is_not_a_text_document_is_listed_with_its_reason(
    tmp_path: Path, content: bytes, kind: UnreadableKind, words: str
) -> None:
    root = library(tmp_path / "lib")
    (root / "bad.md").write_bytes(content)
    entries = listed(root)
    assert_only_bad(entries, "bad", kind)
    reason = entries["bad"].unreadable
    assert reason is not None and words in reason.detail
    with pytest.raises(UnreadableFileError, match=words):
        MarkdownFolderSource(root).get_document("bad")


def test_a_fifo_named_md_is_never_opened(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    os.mkfifo(root / "a.md")
    entries = within(5, lambda: listed(root))
    assert isinstance(entries, dict)
    assert_only_bad(entries, "a", UnreadableKind.NOT_REGULAR)
    assert "FIFO" in str(entries["a"].unreadable)
    source = MarkdownFolderSource(root)
    with pytest.raises(UnreadableFileError, match="FIFO"):
        within(5, lambda: source.get_document("a"))


def test_a_symlink_to_a_fifo_inside_the_root_is_not_opened_either(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    os.mkfifo(root / "pipe")
    os.symlink("pipe", root / "a.md")
    entries = within(5, lambda: listed(root))
    assert isinstance(entries, dict)
    assert_only_bad(entries, "a", UnreadableKind.NOT_REGULAR)


def test_a_too_large_file_is_refused_at_the_bound(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    (root / "big.md").write_text("## Big\n" + "x" * 2000, encoding="utf-8")
    entries = listed(root, max_file_bytes=1000)
    assert_only_bad(entries, "big", UnreadableKind.TOO_LARGE)
    assert "above the bound of 1000 bytes" in str(entries["big"].unreadable)
    assert listed(root, max_file_bytes=4096)["big"].unreadable is None


def test_a_symlink_inside_the_root_is_followed_and_one_outside_is_not(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    (tmp_path / "outside.md").write_text("## Secret\nnot part of the library\n")
    os.symlink(tmp_path / "outside.md", root / "escape.md")
    os.symlink("good0.md", root / "alias.md")
    entries = listed(root)
    assert entries["alias"].unreadable is None and entries["alias"].version == 1
    reason = entries["escape"].unreadable
    assert reason is not None and reason.kind is UnreadableKind.OUTSIDE_ROOT
    with pytest.raises(UnreadableFileError, match="outside the library"):
        MarkdownFolderSource(root).get_document("escape")
    assert MarkdownFolderSource(root).get_document("alias").content == GOOD["good0"]


def test_a_dangling_symlink_is_no_document(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    os.symlink("nowhere.md", root / "dangling.md")
    assert set(listed(root)) == set(GOOD)


_LIST_AS_CHILD = """
import json, sys
from sources.folder import MarkdownFolderSource
out = {}
for e in MarkdownFolderSource(sys.argv[1]).list_documents():
    bad = e.unreadable
    out[e.document_id] = None if bad is None else [bad.kind.value, str(bad)]
print(json.dumps(out))
"""


def without_dac_override(argv: list[str]) -> list[str]:
    """``argv`` as uid 0 without the capabilities that let root read any file."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("setpriv (util-linux) is missing: the permission case needs it")
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}", *argv]


def test_a_file_the_process_may_not_read_is_listed_unreadable(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    secret = root / "secret.md"
    secret.write_text("## Root only\n")
    secret.chmod(0o000)
    done = subprocess.run(
        without_dac_override([sys.executable, "-c", _LIST_AS_CHILD, str(root)]),
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    entries = json.loads(done.stdout.splitlines()[-1])
    assert {k: v for k, v in entries.items() if v is not None} == {
        "secret": ["permission", f"permission: {secret}: cannot open it: Permission denied"],
    }
    assert set(entries) == set(GOOD) | {"secret"}


def test_two_files_with_one_id_list_the_first_only(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    (root / "refund.md").write_text("## A\n")
    (root / "refund").mkdir()
    (root / "refund" / "index.md").write_text("## B\n")
    entries = listed(root)
    assert set(entries) == set(GOOD) | {"refund"}
    assert MarkdownFolderSource(root).get_document("refund").content == "## A\n"


def test_crlf_files_read_as_before(tmp_path: Path) -> None:
    root = library(tmp_path / "lib")
    (root / "dos.md").write_bytes(b"## Dos\r\nline\r\n")
    assert MarkdownFolderSource(root).get_document("dos").content == "## Dos\nline\n"
