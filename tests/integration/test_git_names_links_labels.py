"""Hostile names, links and label defaults on the Git source, with a real repository the
test makes and pushes:

- a symbolic link in the tree (``secrets.md -> ../../etc/passwd``, ``alias.md ->
  refunds.md``) is listed ``unreadable`` (``not_regular``, "a symbolic link") and never
  published: Git keeps the link text, which used to be indexed as the document;
- a path whose name is not UTF-8 (``caf\\xe9.md`` in Latin-1) is listed ``unreadable``
  (``name``) under its escaped id, never published, and a push that deletes it sends no
  event (it used to be listed with a lone surrogate in its id);
- a file turned into a link by a later push is skipped (kept as indexed), not deleted;
- ``default_access_labels``: a file under ``hr/`` that sets no ``access_labels`` is
  published with the rule's labels; one that sets its own keeps them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.git_library import git
from support.webhook_helpers import MemoryPublisher

from sources.base import UnreadableKind
from sources.errors import SourceDataError
from sources.git import GitSource

GOOD = "# Refunds\n\nWithin 30 days.\n"


class Repo:
    def __init__(self, tmp_path: Path) -> None:
        self.remote, self.work = tmp_path / "remote.git", tmp_path / "work"
        self.remote.mkdir()
        self.work.mkdir()
        git(self.remote, "init", "--quiet", "--bare")
        git(self.work, "init", "--quiet", "-b", "main")

    def commit_and_push(self) -> None:
        git(self.work, "add", "-A")
        git(self.work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit",
            "--quiet", "-m", "change")
        git(self.work, "push", "--quiet", str(self.remote), "HEAD:refs/heads/main")


def test_links_and_names_not_utf8_are_refused_and_never_published(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    (repo.work / "refunds.md").write_text(GOOD, encoding="utf-8")
    (repo.work / "later.md").write_text("# Later\n\nA file, for now.\n", encoding="utf-8")
    os.symlink("../../etc/passwd", repo.work / "secrets.md")
    os.symlink("refunds.md", repo.work / "alias.md")
    latin1 = os.fsdecode(b"caf\xe9.md")
    (repo.work / latin1).write_text("# Cafe\n\nOpen at nine.\n", encoding="utf-8")
    repo.commit_and_push()

    source = GitSource(str(repo.remote), tmp_path / "mirror")
    publisher = MemoryPublisher()
    source.publish_pending(publisher)
    assert sorted(e.document_id for e in publisher.events) == ["later", "refunds"]
    assert all("passwd" not in (e.content or "") for e in publisher.events)

    listed = {e.document_id: e for e in source.list_documents()}
    assert set(listed) == {"refunds", "later", "secrets", "alias", "caf\\xe9"}
    for document_id in ("secrets", "alias"):
        reason = listed[document_id].unreadable
        assert reason is not None and reason.kind is UnreadableKind.NOT_REGULAR, listed
        assert "symbolic link" in reason.detail and f"{document_id}.md" in reason.detail
        with pytest.raises(SourceDataError, match="symbolic link"):
            source.get_document(document_id)
    name = listed["caf\\xe9"].unreadable
    assert name is not None and name.kind is UnreadableKind.NAME
    assert "name not UTF-8" in name.detail and "caf\\xe9.md" in name.detail
    for entry in listed.values():
        entry.document_id.encode("utf-8")  # every id can be logged, stored, served

    # a push that turns a file into a link, and deletes the Latin-1 name
    (repo.work / "later.md").unlink()
    os.symlink("refunds.md", repo.work / "later.md")
    (repo.work / latin1).unlink()
    (repo.work / "refunds.md").write_text(GOOD + "\nUpdated.\n", encoding="utf-8")
    repo.commit_and_push()
    publisher.events.clear()
    source.publish_pending(publisher)
    assert [(e.document_id, e.action.value) for e in publisher.events] == [
        ("refunds", "upsert")]
    later = {e.document_id: e for e in source.list_documents()}["later"].unreadable
    assert later is not None and later.kind is UnreadableKind.NOT_REGULAR


def test_default_labels_for_files_that_set_none(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    docs = repo.work / "docs"
    (docs / "hr").mkdir(parents=True)
    (docs / "hr" / "pay.md").write_text("---\ntitle: Pay\n---\n# Pay\n\nBands.\n", "utf-8")
    (docs / "hr" / "own.md").write_text("---\naccess_labels: [managers]\n---\n# Own\n\nx\n",
                                        "utf-8")
    (docs / "hr" / "plain.md").write_text("# Plain\n\nNo front matter.\n", "utf-8")
    (docs / "refunds.md").write_text(GOOD, "utf-8")
    repo.commit_and_push()

    source = GitSource(str(repo.remote), tmp_path / "mirror", path_prefix="docs",
                       default_access_labels="hr/**=staff")
    publisher = MemoryPublisher()
    source.publish_pending(publisher)
    labels = {e.document_id: e.metadata.access_labels for e in publisher.events}
    assert labels == {"hr/pay": ["staff"], "hr/own": None, "hr/plain": ["staff"],
                      "refunds": None}
    assert source.get_document("hr/pay").metadata.access_labels == ["staff"]
    assert source.get_document("hr/own").metadata.access_labels is None
