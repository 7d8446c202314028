"""The folder watcher's comparison pass: the events a change of the folder publishes."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.webhook_helpers import MemoryPublisher

from events.model import Action, ChangeEvent
from store.memory import InMemoryStore
from store.model import DocumentState
from transport.publisher import PublishUnavailable
from watcher.folder_sync import FolderSync, SyncReport
from watcher.watch_state import WatchState

T0 = 1_780_000_000  # whole seconds: the folder's version rule is the mtime in seconds


def put(root: Path, relative: str, text: str, mtime: float | None = T0) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def changes(events: list[ChangeEvent]) -> list[tuple[str, str, int]]:
    return [(e.document_id, e.action.value, e.version) for e in events]


class Folder:
    """A library folder, a publisher that keeps events, and the watcher's state file."""

    def __init__(self, tmp_path: Path, index: InMemoryStore | None = None) -> None:
        self.root = tmp_path / "library"
        self.root.mkdir()
        self.state_path = tmp_path / "state" / "folder-watch.sqlite3"
        self.publisher = MemoryPublisher()
        self.index = index
        self.sync = self.start()

    def start(self) -> FolderSync:
        """A new watcher process: nothing in memory but the state file."""
        return FolderSync(self.root, self.publisher, WatchState(self.state_path), index=self.index)

    def new_events(self) -> list[tuple[str, str, int]]:
        before = len(self.publisher.events)
        self.sync.sync()
        return changes(self.publisher.events[before:])


@pytest.fixture
def folder(tmp_path: Path) -> Folder:
    return Folder(tmp_path)


def test_a_new_file_is_one_upsert_with_its_content_and_nothing_more_after(folder: Folder) -> None:
    put(folder.root, "refunds/index.md", "---\ntitle: Refunds\n---\n## Window\n14 days.\n")
    assert folder.new_events() == [("refunds", "upsert", T0)]
    event = folder.publisher.events[0]
    assert event.content == "---\ntitle: Refunds\n---\n## Window\n14 days.\n"
    assert event.content_type == "text/markdown"
    assert event.metadata.source_path == "refunds/index.md"
    assert event.changed_at == datetime.fromtimestamp(T0, UTC)
    assert folder.new_events() == []


def test_an_edit_is_an_upsert_at_a_higher_version_even_within_the_same_second(
    folder: Folder,
) -> None:
    put(folder.root, "refunds.md", "## Window\n14 days.\n")
    folder.new_events()
    put(folder.root, "refunds.md", "## Window\n30 days.\n", mtime=T0 + 60)
    assert folder.new_events() == [("refunds", "upsert", T0 + 60)]
    put(folder.root, "refunds.md", "## Window\n31 days.\n", mtime=T0 + 60.5)  # same second
    assert folder.new_events() == [("refunds", "upsert", T0 + 61)]
    assert folder.publisher.events[-1].content == "## Window\n31 days.\n"


def test_a_rename_is_an_upsert_of_the_new_id_then_a_delete_of_the_old(folder: Folder) -> None:
    put(folder.root, "promo/spring.md", "## Offer\n30 % off.\n")
    folder.new_events()
    os.rename(folder.root / "promo/spring.md", folder.root / "promo/spring-2027.md")
    assert folder.new_events() == [
        ("promo/spring-2027", "upsert", T0),
        ("promo/spring", "delete", T0 + 1),
    ]
    assert folder.publisher.events[-1].content is None


def test_versions_keep_growing_across_a_delete_and_a_re_creation(folder: Folder) -> None:
    put(folder.root, "terms.md", "## Terms\nv1\n")
    folder.new_events()
    (folder.root / "terms.md").unlink()
    assert folder.new_events() == [("terms", "delete", T0 + 1)]
    put(folder.root, "terms.md", "## Terms\nv1\n", mtime=T0)  # same text, an old mtime
    assert folder.new_events() == [("terms", "upsert", T0 + 2)]


def test_a_restarted_watcher_sends_what_changed_while_it_was_stopped_and_only_that(
    folder: Folder,
) -> None:
    put(folder.root, "a.md", "## A\none\n")
    put(folder.root, "b.md", "## B\none\n")
    put(folder.root, "c.md", "## C\none\n")
    folder.new_events()
    folder.sync.state.close()  # the process stops
    put(folder.root, "a.md", "## A\ntwo\n", mtime=T0)  # edited, mtime put back: same second
    (folder.root / "b.md").unlink()
    put(folder.root, "d.md", "## D\nnew\n", mtime=T0 + 5)
    folder.sync = folder.start()
    assert sorted(folder.new_events()) == [
        ("a", "upsert", T0 + 1), ("b", "delete", T0 + 1), ("d", "upsert", T0 + 5),
    ]
    folder.sync.state.close()
    folder.sync = folder.start()
    assert folder.new_events() == []


def test_the_index_is_a_version_floor_and_what_it_already_holds_is_not_sent_again(
    tmp_path: Path,
) -> None:
    index = InMemoryStore()
    now = datetime.now(UTC)
    for document_id, version in (("held", T0), ("ahead", T0 + 100), ("replayed/other", 3)):
        index.put_state(DocumentState(document_id, version, now, now))
    folder = Folder(tmp_path, index)
    put(folder.root, "held.md", "## Held\nsame\n")  # indexed before the state file existed
    put(folder.root, "ahead.md", "## Ahead\nedited\n", mtime=T0 + 200)
    put(folder.root, "fresh.md", "## Fresh\n")
    assert sorted(folder.new_events()) == [("ahead", "upsert", T0 + 200), ("fresh", "upsert", T0)]
    # a document of another producer, absent from the folder, is not deleted
    index.put_state(DocumentState("ahead", T0 + 300, now, now))  # e.g. a reindex wrote it
    put(folder.root, "ahead.md", "## Ahead\nagain\n", mtime=T0 + 250)
    assert folder.new_events() == [("ahead", "upsert", T0 + 301)]
    put(folder.root, "held.md", "## Held\nchanged\n", mtime=T0)
    assert folder.new_events() == [("held", "upsert", T0 + 1)]


def test_html_files_are_documents_and_editor_files_are_not(folder: Folder) -> None:
    put(folder.root, "help/index.html", "<title>Help</title><h2>Hours</h2><p>7-23</p>")
    put(folder.root, "help/faq.htm", "<h2>FAQ</h2>")
    for name in (".refunds.md.swp", "refunds.md~", "#refunds.md#", ".#refunds.md",
                 "refunds.md___jb_tmp___", "notes.txt", "4913", ".git/HEAD.md"):
        put(folder.root, name, "## noise\n")
    assert sorted(folder.new_events()) == [("help", "upsert", T0), ("help/faq", "upsert", T0)]
    assert {e.content_type for e in folder.publisher.events} == {"text/html"}


def test_an_unreadable_file_is_skipped_and_keeps_its_indexed_version(folder: Folder) -> None:
    put(folder.root, "good.md", "## Good\n")
    put(folder.root, "bad.md", "## Bad\nfine for now\n")
    folder.new_events()
    (folder.root / "bad.md").write_bytes(b"## Bad\n\xff\xfe not UTF-8\n")
    put(folder.root, "yaml.md", "---\ntitle: [unclosed\n---\n## Y\n")
    put(folder.root, "at@sign.md", "## id with an at sign\n")
    report = folder.sync.sync()
    assert (report.upserts, report.deletes, report.skipped_files) == (0, 0, 3)
    assert folder.sync.sync().skipped_files == 0  # reported once while unchanged
    put(folder.root, "bad.md", "## Bad\nfixed\n", mtime=T0 + 9)
    assert folder.new_events() == [("bad", "upsert", T0 + 9)]


def test_a_failed_publish_is_sent_again_by_the_next_pass(folder: Folder) -> None:
    put(folder.root, "a.md", "## A\n")
    folder.publisher.fail_with = PublishUnavailable("queue locked")
    report = folder.sync.sync()
    assert report.publish_failed
    assert folder.publisher.events == []
    folder.publisher.fail_with = None
    assert folder.new_events() == [("a", "upsert", T0)]


def test_two_files_with_one_id_publish_the_first_only(folder: Folder) -> None:
    put(folder.root, "refunds.md", "## From refunds.md\n")
    put(folder.root, "refunds/index.md", "## From refunds/index.md\n")
    assert folder.new_events() == [("refunds", "upsert", T0)]
    assert folder.publisher.events[0].action is Action.UPSERT
    assert folder.publisher.events[0].metadata.source_path == "refunds.md"


def test_a_rebuilt_index_gets_everything_again_from_a_restarted_watcher(tmp_path: Path) -> None:
    folder = Folder(tmp_path, InMemoryStore())
    put(folder.root, "kept.md", "## Kept\n")
    put(folder.root, "gone.md", "## Gone\n")
    folder.new_events()
    (folder.root / "gone.md").unlink()
    folder.new_events()
    folder.sync.state.close()
    now = datetime.now(UTC)
    folder.index = InMemoryStore()  # the index file deleted: only an old copy of "gone"
    folder.index.put_state(DocumentState("gone", T0, now, now))
    folder.sync = folder.start()
    # sent again as they were published: the same version, not one more per restart
    assert sorted(folder.new_events()) == [("gone", "delete", T0 + 1), ("kept", "upsert", T0)]
    assert folder.new_events() == []


def test_an_emptied_folder_deletes_nothing_but_one_last_file_may_go(folder: Folder) -> None:
    put(folder.root, "a.md", "## A\n")
    put(folder.root, "b.md", "## B\n")
    folder.new_events()
    (folder.root / "a.md").unlink()
    (folder.root / "b.md").unlink()  # an unmounted share looks the same
    assert folder.new_events() == []
    put(folder.root, "b.md", "## B\n")  # the folder is back, without a.md
    assert folder.new_events() == [("a", "delete", T0 + 1)]
    (folder.root / "b.md").unlink()
    assert folder.new_events() == [("b", "delete", T0 + 1)]  # the last document may go


def test_a_start_up_pass_cut_by_a_failed_publish_is_finished_by_the_next(tmp_path: Path) -> None:
    folder = Folder(tmp_path, InMemoryStore())
    put(folder.root, "a.md", "## A\none\n")
    put(folder.root, "b.md", "## B\none\n")
    folder.new_events()
    folder.sync.state.close()
    put(folder.root, "b.md", "## B\ntwo\n", mtime=T0)  # same size and mtime, while stopped
    folder.index = InMemoryStore()  # and the index was rebuilt empty
    folder.sync = folder.start()
    folder.publisher.fail_with = PublishUnavailable("queue locked")
    assert folder.sync.sync().publish_failed
    folder.publisher.fail_with = None
    # a: the same content again at its version; b: new content, so a new version
    assert sorted(folder.new_events()) == [("a", "upsert", T0), ("b", "upsert", T0 + 1)]
    assert folder.publisher.events[-1].content == "## B\ntwo\n"
    assert folder.new_events() == []


def test_a_symlink_loop_a_fifo_and_a_huge_file_never_stop_a_pass(tmp_path: Path) -> None:
    """One pass publishes the good files, names the bad ones."""
    folder = Folder(tmp_path)
    folder.sync = FolderSync(folder.root, folder.publisher, WatchState(folder.state_path),
                             max_file_bytes=100)
    put(folder.root, "good.md", "## Good\n")
    os.symlink("selfloop.md", folder.root / "selfloop.md")
    os.mkfifo(folder.root / "a.md")
    put(folder.root, "huge.md", "## Huge\n" + "x" * 200)
    done: list[SyncReport] = []
    thread = threading.Thread(target=lambda: done.append(folder.sync.sync()), daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "the pass is blocked (the FIFO was opened?)"
    assert (done[0].upserts, done[0].skipped_files) == (1, 3)
    assert changes(folder.publisher.events) == [("good", "upsert", T0)]
    put(folder.root, "good.md", "## Good, edited\n", mtime=T0 + 5)
    assert folder.new_events() == [("good", "upsert", T0 + 5)]  # the watcher goes on


def test_a_published_file_that_becomes_unreadable_is_not_deleted(folder: Folder) -> None:
    put(folder.root, "a.md", "## A\n")
    put(folder.root, "b.md", "## B\n")
    assert sorted(folder.new_events()) == [("a", "upsert", T0), ("b", "upsert", T0)]
    (folder.root / "b.md").unlink()
    os.mkfifo(folder.root / "b.md")  # replaced by something that cannot be read
    (folder.root / "a.md").unlink()
    os.symlink("a.md", folder.root / "a.md")  # now a loop
    assert folder.new_events() == []
    assert folder.sync.sync().skipped_files == 0  # reported once while unchanged
