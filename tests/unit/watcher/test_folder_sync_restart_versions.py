"""A restart sends a change still queued again at the same version.

After a kill -9 during editing, the watcher's start-up pass found events it had
published but the index did not hold yet (they still waited in the queue) and sent
them again at one version more per restart: documents ended 1-4 versions above their
file's. Now the same change goes again at the version it was published with (a copy
still queued is a redelivery the version guard skips); a new version only for new
content, or when the index already holds that version (a newer tombstone).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from support.webhook_helpers import MemoryPublisher

from indexing.core import Indexer
from store.memory import InMemoryStore
from store.model import DocumentState
from watcher.folder_sync import FolderSync
from watcher.watch_state import WatchState

T0 = 1_780_000_000


def put(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def doc(version: int, words: str) -> str:
    return f"---\nversion: {version}\n---\n## Rule\n{words}\n"


class Deployment:
    """A folder, a queue (the publisher's list, drained on demand), an index, the state file."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "library"
        self.root.mkdir()
        self.state_path = tmp_path / "folder-watch.sqlite3"
        self.queue = MemoryPublisher()
        self.index = InMemoryStore()
        self.sync = self.start()

    def start(self) -> FolderSync:
        return FolderSync(self.root, self.queue, WatchState(self.state_path), index=self.index)

    def kill_and_restart(self) -> None:
        """kill -9: nothing in memory is kept; the queue (not yet drained) and files are."""
        self.sync.state.close()
        self.sync = self.start()

    def drain(self) -> None:
        Indexer(self.index).apply(self.queue.events)
        self.queue.events.clear()

    def versions(self) -> dict[str, int]:
        return {s.document_id: s.version for s in self.index.iter_states() if not s.deleted}


def test_changes_still_queued_at_a_kill_are_sent_again_at_their_own_version(
    tmp_path: Path,
) -> None:
    d = Deployment(tmp_path)
    for i in range(5):
        put(d.root, f"p{i}.md", doc(1, f"first {i}"))
    d.sync.sync()
    d.drain()
    for i in range(5):
        put(d.root, f"p{i}.md", doc(2, f"second {i}"))
    d.sync.sync()  # queued at version 2, not indexed: then kill -9, three times over
    for _ in range(3):
        d.kill_and_restart()
        d.sync.sync()
    assert {e.version for e in d.queue.events} == {2}
    d.drain()
    assert d.versions() == {f"p{i}": 2 for i in range(5)}
    assert {c.version for c in d.index.iter_chunks()} == {2}


def test_a_file_edited_while_stopped_gets_the_files_version_and_its_new_content(
    tmp_path: Path,
) -> None:
    d = Deployment(tmp_path)
    put(d.root, "refunds.md", doc(1, "thirty days"))
    d.sync.sync()  # queued, not indexed
    d.sync.state.close()
    put(d.root, "refunds.md", doc(2, "sixty days"))
    d.sync = d.start()
    d.sync.sync()
    assert [(e.version, "sixty" in (e.content or "")) for e in d.queue.events] == [
        (1, False), (2, True)]
    d.drain()
    assert d.versions() == {"refunds": 2}


def test_a_tombstone_at_the_published_version_gets_a_new_version(tmp_path: Path) -> None:
    d = Deployment(tmp_path)
    put(d.root, "refunds.md", doc(3, "thirty days"))
    d.sync.sync()
    d.queue.events.clear()  # the queued event was lost; the reconcile deleted the document
    now = datetime.now(UTC)
    d.index.put_state(DocumentState("refunds", 3, now, now, deleted=True))
    d.kill_and_restart()
    d.sync.sync()
    assert [e.version for e in d.queue.events] == [4]  # version 3 would be skipped as stale
    d.drain()
    assert d.versions() == {"refunds": 4}


def test_a_delete_still_queued_goes_again_at_its_version(tmp_path: Path) -> None:
    d = Deployment(tmp_path)
    put(d.root, "a.md", doc(1, "alpha"))
    put(d.root, "b.md", doc(1, "beta"))
    d.sync.sync()
    d.drain()
    (d.root / "a.md").unlink()
    d.sync.sync()  # the delete at version 2, queued
    d.kill_and_restart()
    d.sync.sync()
    assert [(e.document_id, e.action.value, e.version) for e in d.queue.events] == [
        ("a", "delete", 2), ("a", "delete", 2)]
    d.drain()
    assert d.versions() == {"b": 1}
