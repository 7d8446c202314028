"""On the Git source, a file whose path makes a look-alike id
(``refunds\\u200b.md`` beside ``refunds.md``) is listed unreadable (``document_id``) with
the reason and never published, on the first publish and on later pushes; the other
files are published as before (a bad name used to fail every publish of the branch)."""

from __future__ import annotations

from pathlib import Path

from support.git_library import git
from support.webhook_helpers import MemoryPublisher

from sources.base import UnreadableKind
from sources.git import GitSource


def commit(work: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        (work / name).write_text(content, encoding="utf-8")
        git(work, "add", name)
    git(work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet",
        "-m", "change")


def test_a_lookalike_file_is_listed_unreadable_and_never_published(tmp_path: Path) -> None:
    remote, work = tmp_path / "remote.git", tmp_path / "work"
    remote.mkdir()
    work.mkdir()
    git(remote, "init", "--quiet", "--bare")
    git(work, "init", "--quiet", "-b", "main")
    commit(work, {"refunds.md": "# Refunds\n\n30 days.\n",
                  "refunds\u200b.md": "# Refunds\n\n300 days.\n"})
    git(work, "push", "--quiet", str(remote), "HEAD:refs/heads/main")

    source = GitSource(str(remote), tmp_path / "mirror")
    publisher = MemoryPublisher()
    source.publish_pending(publisher)
    assert [e.document_id for e in publisher.events] == ["refunds"]

    listed = {e.document_id: e for e in source.list_documents()}
    assert set(listed) == {"refunds", "refunds\u200b"}
    assert listed["refunds"].unreadable is None
    reason = listed["refunds\u200b"].unreadable
    assert reason is not None and reason.kind is UnreadableKind.DOCUMENT_ID
    assert "U+200B" in reason.detail

    commit(work, {"refunds.md": "# Refunds\n\n60 days.\n",
                  "refunds\u200b.md": "# Refunds\n\n600 days.\n"})
    git(work, "push", "--quiet", str(remote), "HEAD:refs/heads/main")
    publisher.events.clear()
    source.publish_pending(publisher)
    assert [(e.document_id, e.content) for e in publisher.events] == [
        ("refunds", "# Refunds\n\n60 days.\n")]
