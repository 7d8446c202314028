"""The Git source on real repositories: versions, force-push offsets, prefixes, failed publishes.

No server is needed: the remote is a bare repository in ``tmp_path``, and
``git`` itself does every fetch.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.git_library import git
from support.webhook_helpers import MemoryPublisher

from events.model import Action
from sources.git import GitSource
from transport.publisher import PublishUnavailable


class Author:
    def __init__(self, root: Path) -> None:
        self.remote = root / "remote.git"
        self.work = root / "work"
        self.remote.mkdir()
        git(self.remote, "init", "--quiet", "--bare")
        self.work.mkdir()
        git(self.work, "init", "--quiet", "-b", "main")

    def commit(self, files: dict[str, str | None]) -> str:
        for name, content in files.items():
            if content is None:
                git(self.work, "rm", "--quiet", name)
                continue
            (self.work / name).parent.mkdir(parents=True, exist_ok=True)
            (self.work / name).write_text(content, encoding="utf-8")
            git(self.work, "add", name)
        git(self.work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit",
            "--quiet", "-m", "change")
        return git(self.work, "rev-parse", "HEAD").strip()

    def push(self, *, force: bool = False) -> None:
        git(self.work, "push", "--quiet", *(["--force"] if force else []), str(self.remote),
            "HEAD:refs/heads/main")


@pytest.fixture
def author(tmp_path: Path) -> Author:
    return Author(tmp_path)


def test_a_force_push_keeps_every_version_growing_for_events_and_listing(
    author: Author, tmp_path: Path
) -> None:
    author.commit({"a.md": "# A1\n", "b.md": "# B1\n"})
    author.commit({"a.md": "# A2\n"})
    author.push()
    source = GitSource(str(author.remote), tmp_path / "mirror")
    publisher = MemoryPublisher()
    source.publish_pending(publisher)
    assert {(e.document_id, e.version) for e in publisher.events} == {("a", 2), ("b", 1)}
    # Rewrite the last commit: a has as many commits as before but other content.
    git(author.work, "reset", "--quiet", "--hard", "HEAD~1")
    author.commit({"a.md": "# A2 rewritten\n"})
    author.push(force=True)
    publisher.events.clear()
    pending = source.publish_pending(publisher)
    assert pending.forced
    assert [(e.document_id, e.version, e.content) for e in publisher.events] == [
        ("a", 3, "# A2 rewritten\n")]
    listed = {e.document_id: e.version for e in source.list_documents()}
    assert listed == {"a": 3, "b": 1}
    # Another process reading the same mirror sees the same versions.
    other = GitSource(str(author.remote), tmp_path / "mirror")
    assert {e.document_id: e.version for e in other.list_documents()} == listed


def test_only_files_below_the_prefix_are_documents_with_the_prefix_stripped(
    author: Author, tmp_path: Path
) -> None:
    author.commit({"policies/refund/index.md": "# R\n", "README.md": "# repo\n",
                   "policies/notes.txt": "x", "policies/faq.html": "<h1>FAQ</h1>"})
    author.push()
    source = GitSource(str(author.remote), tmp_path / "mirror", path_prefix="policies")
    listed = {e.document_id: e.version for e in source.list_documents()}
    assert listed == {"refund": 1, "faq": 1}
    assert source.get_document("faq").content_type == "text/html"


def test_a_failed_publish_leaves_the_published_head_and_the_next_call_sends_it_again(
    author: Author, tmp_path: Path
) -> None:
    author.commit({"a.md": "# A\n"})
    author.push()
    source = GitSource(str(author.remote), tmp_path / "mirror")
    publisher = MemoryPublisher()
    source.publish_pending(publisher)
    author.commit({"a.md": None, "c.md": "# C\n"})
    author.push()
    publisher.fail_with = PublishUnavailable("queue down")
    with pytest.raises(PublishUnavailable):
        source.publish_pending(publisher)
    publisher.fail_with = None
    source.publish_pending(publisher)
    assert {(e.document_id, e.action, e.version) for e in publisher.events[1:]} == {
        ("a", Action.DELETE, 2), ("c", Action.UPSERT, 1)}
    assert source.published_head() == source.head()


def test_the_listing_fetches_so_a_lost_push_shows_the_new_versions(
    author: Author, tmp_path: Path
) -> None:
    author.commit({"a.md": "# A\n"})
    author.push()
    source = GitSource(str(author.remote), tmp_path / "mirror")
    source.publish_pending(MemoryPublisher())
    author.commit({"a.md": "# A again\n"})
    author.push()  # no webhook, no poll
    assert {e.document_id: e.version for e in source.list_documents()} == {"a": 2}
    assert source.published_head() != source.head()


def test_an_unreachable_remote_is_a_source_unavailable_error(tmp_path: Path) -> None:
    from sources.errors import SourceUnavailableError

    source = GitSource(str(tmp_path / "nowhere.git"), tmp_path / "mirror")
    with pytest.raises(SourceUnavailableError, match="git fetch"):
        list(source.list_documents())
