"""The folder watcher and ``default_access_labels``.

The watcher publishes a file's default labels in its event, and remembers them with the
file: a rule added (or changed) for a folder of files already indexed re-sends those
files at the next start (one version more), so the index does not keep serving them
unlabelled; files no rule covers are not sent again, and the same rules again send
nothing.
"""

from __future__ import annotations

from pathlib import Path

from support.webhook_helpers import MemoryPublisher

from indexing.core import Indexer
from sources.label_defaults import parse_label_defaults
from store.memory import InMemoryStore
from watcher.folder_sync import FolderSync
from watcher.watch_state import WatchState


def put(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class Deployment:
    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "library"
        self.root.mkdir()
        self.state_path = tmp_path / "folder-watch.sqlite3"
        self.queue = MemoryPublisher()
        self.index = InMemoryStore()
        self.sync: FolderSync | None = None

    def start(self, rules: str) -> FolderSync:
        if self.sync is not None:
            self.sync.state.close()
        self.sync = FolderSync(self.root, self.queue, WatchState(self.state_path),
                               index=self.index,
                               default_access_labels=parse_label_defaults(rules))
        return self.sync

    def pass_and_drain(self) -> list[tuple[str, int, list[str] | None]]:
        assert self.sync is not None
        self.sync.sync()
        sent = [(e.document_id, e.version, e.metadata.access_labels) for e in self.queue.events]
        Indexer(self.index).apply(self.queue.events)
        self.queue.events.clear()
        return sorted(sent)

    def labels(self) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for chunk, _at in self.index.chunks.values():
            found.setdefault(chunk.document_id, set()).update(chunk.metadata.access_labels)
        return found


def test_a_rule_added_later_relabels_the_files_it_covers_at_the_next_start(
        tmp_path: Path) -> None:
    d = Deployment(tmp_path)
    put(d.root, "hr/pay.md", "---\nversion: 4\n---\n## Pay\nBands.\n")
    put(d.root, "hr/own.md", "---\nversion: 4\naccess_labels: [managers]\n---\n## Own\nx.\n")
    put(d.root, "refunds.md", "---\nversion: 4\n---\n## Refunds\n30 days.\n")
    d.start("")
    assert d.pass_and_drain() == [("hr/own", 4, None), ("hr/pay", 4, None),
                                  ("refunds", 4, None)]
    assert d.labels() == {"hr/pay": set(), "hr/own": {"managers"}, "refunds": set()}

    d.start("hr/**=staff")
    assert d.pass_and_drain() == [("hr/own", 5, None), ("hr/pay", 5, ["staff"])]
    assert d.labels() == {"hr/pay": {"staff"}, "hr/own": {"managers"}, "refunds": set()}

    d.start("hr/**=staff")  # the same rules again: nothing to send
    assert d.pass_and_drain() == []
    assert d.sync is not None
    d.sync.sync()  # a later pass neither
    assert d.queue.events == []

    d.start("hr/**=staff,hr")
    assert d.pass_and_drain() == [("hr/own", 6, None), ("hr/pay", 6, ["staff", "hr"])]
    assert d.labels()["hr/pay"] == {"staff", "hr"}
