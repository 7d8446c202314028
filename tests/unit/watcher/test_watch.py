"""The folder watcher in its thread, on real file-system notifications (watchfiles)."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest
import watchfiles
from support.waiting import wait_until
from support.webhook_helpers import MemoryPublisher

from events.model import ChangeEvent
from sources.errors import SourceUnavailableError
from store.errors import TransientStoreError
from store.memory import InMemoryStore
from store.model import DocumentState
from watcher.folder_sync import FolderSync, SyncReport
from watcher.watch import FolderWatcher, RelevantChanges, WatcherThread, start_watcher_thread
from watcher.watch_state import WatchState


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, MemoryPublisher, WatcherThread]]:
    root = tmp_path / "library"
    root.mkdir()
    (root / "refunds.md").write_text("## Window\n14 days.\n")
    publisher = MemoryPublisher()
    thread = start_watcher_thread(
        root, publisher, state_path=tmp_path / "watch.sqlite3", debounce_ms=200
    )
    try:
        yield root, publisher, thread
    finally:
        thread.stop()
        assert not thread.is_alive()
        assert thread.error is None


def seen(publisher: MemoryPublisher) -> list[tuple[str, str]]:
    return [(e.document_id, e.action.value) for e in publisher.events]


def last(publisher: MemoryPublisher) -> ChangeEvent:
    return publisher.events[-1]


def test_create_edit_rename_delete_each_publish_their_events(
    watched: tuple[Path, MemoryPublisher, WatcherThread],
) -> None:
    root, publisher, _thread = watched
    wait_until(lambda: seen(publisher), 10, "the start-up pass",
               accept=lambda s: s == [("refunds", "upsert")])
    (root / "promo.md").write_text("## Offer\n30 % off.\n")
    wait_until(lambda: seen(publisher), 10, "2 events", accept=lambda s: len(s) == 2)
    assert seen(publisher)[-1] == ("promo", "upsert")
    first = last(publisher).version

    (root / "promo.md").write_text("## Offer\n40 % off.\n")
    wait_until(lambda: seen(publisher), 10, "3 events", accept=lambda s: len(s) == 3)
    assert (last(publisher).content, last(publisher).version > first) == (
        "## Offer\n40 % off.\n", True,
    )

    (root / "promo.md").rename(root / "spring.md")
    wait_until(lambda: seen(publisher), 10, "5 events", accept=lambda s: len(s) == 5)
    assert seen(publisher)[3:] == [("spring", "upsert"), ("promo", "delete")]
    assert publisher.events[4].version > publisher.events[2].version

    (root / "spring.md").unlink()
    wait_until(lambda: seen(publisher), 10, "6 events", accept=lambda s: len(s) == 6)
    assert seen(publisher)[-1] == ("spring", "delete")


def test_a_renamed_folder_moves_every_document_in_it(
    watched: tuple[Path, MemoryPublisher, WatcherThread],
) -> None:
    root, publisher, _thread = watched
    (root / "cities" / "lisbon").mkdir(parents=True)
    (root / "cities" / "lisbon" / "index.md").write_text("## Lisbon\n")
    wait_until(lambda: seen(publisher), 10, "cities/lisbon's upsert",
               accept=lambda s: ("cities/lisbon", "upsert") in s)
    (root / "cities").rename(root / "towns")
    wait_until(lambda: seen(publisher), 10, "cities/lisbon's delete",
               accept=lambda s: ("cities/lisbon", "delete") in s)
    assert ("towns/lisbon", "upsert") in seen(publisher)


def test_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailableError, match="gone"):
        start_watcher_thread(tmp_path / "gone", MemoryPublisher(), state_path=tmp_path / "s")


@pytest.mark.parametrize(
    ("relative", "expected"),
    [("refunds.md", True), ("help/contact.html", True), ("cities", True),
     ("cities/.refunds.md.swp", False), ("refunds.md~", False), ("#refunds.md#", False),
     (".git/index", False), ("notes.txt", False), ("refunds.md___jb_tmp___", False)],
)
def test_only_changes_that_can_alter_the_library_start_a_pass(
    tmp_path: Path, relative: str, expected: bool
) -> None:
    relevant = RelevantChanges(tmp_path)
    assert relevant(watchfiles.Change.modified, str(tmp_path / relative)) is expected


class FlakyIndex(InMemoryStore):
    """An index that cannot be read the first time (locked, unreachable)."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 1

    def iter_states(self) -> Iterator[DocumentState]:
        if self.failures:
            self.failures -= 1
            raise TransientStoreError("index locked")
        return super().iter_states()


def test_an_index_that_cannot_be_read_is_retried_and_the_watcher_goes_on(tmp_path: Path) -> None:
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "refunds.md").write_text("## Window\n")
    publisher, index = MemoryPublisher(), FlakyIndex()
    thread = start_watcher_thread(tmp_path / "library", publisher, index=index,
                                  state_path=tmp_path / "s.sqlite3", rescan_seconds=0.1)
    try:
        wait_until(lambda: seen(publisher), 10, "the start-up pass",
                   accept=lambda s: s == [("refunds", "upsert")])
        assert index.failures == 0
    finally:
        thread.stop()
    assert thread.error is None


class BrokenSync(FolderSync):
    """A comparison that hits an unexpected error (a bug, an OS error) ``failures`` times."""

    failures = 2

    def sync(self, touched: Collection[str] = ()) -> SyncReport:
        if self.failures > 0:
            self.failures -= 1
            raise OSError(24, "Too many open files")
        return super().sync(touched)


def test_a_watcher_that_cannot_go_on_says_so_and_restarts_with_backoff(tmp_path: Path) -> None:
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "refunds.md").write_text("## Window\n")
    publisher = MemoryPublisher()
    state = WatchState(tmp_path / "s.sqlite3")
    sync = BrokenSync(tmp_path / "library", publisher, state)
    thread = WatcherThread(FolderWatcher(sync, rescan_seconds=0.2), state,
                           restart_initial_s=0.3, restart_max_s=0.6).start()
    try:
        wait_until(thread.health, 10, "a failed watcher",
                   accept=lambda h: h["status"] == "failed")
        health = thread.health()
        assert "Too many open files" in health["error"], health
        assert thread.is_alive()  # waiting to start again, not dead
        wait_until(lambda: seen(publisher), 10, "the first pass after the restarts",
                   accept=lambda s: s == [("refunds", "upsert")])
        assert thread.restarts == 2
        wait_until(thread.health, 10, "a healthy watcher", accept=lambda h: h["status"] == "ok")
        (tmp_path / "library" / "promo.md").write_text("## Offer\n")
        wait_until(lambda: seen(publisher), 10, "promo's upsert",  # follows the folder again
                   accept=lambda s: ("promo", "upsert") in s)
    finally:
        thread.stop()
    assert not thread.is_alive() and thread.error is None


def test_a_stop_during_the_backoff_ends_the_thread_at_once(tmp_path: Path) -> None:
    (tmp_path / "library").mkdir()
    state = WatchState(tmp_path / "s.sqlite3")
    sync = BrokenSync(tmp_path / "library", MemoryPublisher(), state)
    sync.failures = 10**6
    thread = WatcherThread(FolderWatcher(sync), state, restart_initial_s=30,
                           restart_max_s=60).start()
    wait_until(thread.health, 10, "a failed watcher", accept=lambda h: h["status"] == "failed")
    started = time.monotonic()
    thread.stop(timeout_s=5)
    assert not thread.is_alive() and time.monotonic() - started < 5


def test_passes_that_keep_failing_make_health_say_failing(tmp_path: Path) -> None:
    (tmp_path / "library").mkdir()
    publisher, index = MemoryPublisher(), FlakyIndex()
    index.failures = 10**6
    thread = start_watcher_thread(tmp_path / "library", publisher, index=index,
                                  state_path=tmp_path / "s.sqlite3", rescan_seconds=0.05)
    try:
        wait_until(thread.health, 10, "a failing watcher",
                   accept=lambda h: h["status"] == "failing")
        assert "index locked" in thread.health()["error"]
        index.failures = 0
        wait_until(thread.health, 10, "a healthy watcher", accept=lambda h: h["status"] == "ok")
    finally:
        thread.stop()
