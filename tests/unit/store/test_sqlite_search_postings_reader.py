"""The keyword leg's copy is read on a thread of its own: no search and no write waits for it.

Reading the copy takes seconds at 100k chunks. A user must not pay for it: while it
is read, searches get FTS5's answer (the same answer) at once, writes go through,
a copy the data has moved past is never used, and a read that fails is logged
while FTS5 goes on answering. The reader's seam (``read_copy``) lets a test hold
the read on an Event, or make it fail.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.chunks import make_chunk
from support.keyword_copy import DEADLINE_S, hits, only_fts5, settle
from support.stores import add_current

from chunker.model import Chunk
from store.search_postings import Postings
from store.sqlite import SQLiteStore
from store.sqlite_search import SQLiteSearchIndex, read_postings


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    """Where a search or a write runs, so the test can give up on it at a deadline."""
    with ThreadPoolExecutor(2) as executor:
        yield executor


def chunk(doc: str, text: str) -> Chunk:
    return make_chunk(doc, 1, "s", text=text, metadata={"language": None})


def library(store: SQLiteStore) -> None:
    add_current(store, [chunk(f"doc-{i:03d}", " ".join(["refund"] * (1 + i % 7) + ["fee"] * (i % 3)
                                             + [f"w{i % 11}"]))
                for i in range(60)])


def label(index: SQLiteSearchIndex) -> tuple[int, int] | None:
    """The data key the index's copy was read at (None: no copy)."""
    return None if index._copy is None else index._copy[0]


class HeldRead:
    """A ``read_copy`` that stops at ``where`` ("before" or "after" its snapshot) until
    released: ``reached`` tells the test the reader is there."""

    def __init__(self, where: str = "before") -> None:
        self.where = where
        self.reached = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, conn: sqlite3.Connection) -> Postings | None:
        self.calls += 1
        if self.where == "before":
            self._hold()
        postings = read_postings(conn)
        if self.where == "after":
            self._hold()
        return postings

    def _hold(self) -> None:
        self.reached.set()
        if not self.release.wait(DEADLINE_S):
            raise TimeoutError("the test never released the read")


def start_read(index: SQLiteSearchIndex, held: HeldRead, terms: list[str]) -> None:
    """Two searches over unchanged data: the second starts the read; wait until it holds."""
    hits(index, terms)
    hits(index, terms)
    assert held.reached.wait(DEADLINE_S), "the second search over unchanged data read no copy"


def done(pool: ThreadPoolExecutor, fn: Callable[[], Any]) -> Any:
    """``fn``'s result, computed on another thread: a call that waits for the held read
    fails here at the deadline instead of hanging the test."""
    return pool.submit(fn).result(timeout=DEADLINE_S)


def test_results_are_the_same_with_and_without_the_copy(sqlite_store: SQLiteStore) -> None:
    library(sqlite_store)
    index, reference = SQLiteSearchIndex(sqlite_store), only_fts5(sqlite_store)
    questions = [["refund"], ["fee", "w3"], ["refund", "fee", "w10"], ["absent"]]
    before = [hits(index, q, 20) for q in questions]  # FTS5, and the read started
    settle(index)
    assert index._copy is not None and index._copy[1] is not None
    after = [hits(index, q, 20) for q in questions]  # the copy
    assert before == after == [hits(reference, q, 20) for q in questions]
    assert after[0] != []
    index.close()


def test_a_search_and_a_write_do_not_wait_for_the_read(
    sqlite_store: SQLiteStore, pool: ThreadPoolExecutor
) -> None:
    library(sqlite_store)
    held = HeldRead()
    index, reference = SQLiteSearchIndex(sqlite_store, read_copy=held), only_fts5(sqlite_store)
    start_read(index, held, ["refund"])

    # The read is held: a search answers (FTS5's answer) and a write in this process goes
    # through, each well before the deadline.
    assert done(pool, lambda: hits(index, ["refund", "fee"])) == hits(reference, ["refund", "fee"])
    done(pool, lambda: add_current(sqlite_store, [chunk("doc-new", "refund parcel")]))
    assert [cid for cid, _ in done(pool, lambda: hits(index, ["parcel"]))] == ["doc-new@v1#s"]
    assert held.calls == 1  # one read at a time: the searches above started no other

    held.release.set()
    settle(index)
    index.close()


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_write_during_the_read_leaves_that_copy_unused(
    sqlite_store: SQLiteStore, where: str
) -> None:
    """"before": the snapshot holds the write, newer than its label; "after": it lacks
    the write. Either way the key has moved, and the copy must not answer."""
    library(sqlite_store)
    held = HeldRead(where)
    index, reference = SQLiteSearchIndex(sqlite_store, read_copy=held), only_fts5(sqlite_store)
    start_read(index, held, ["refund"])
    before = index._data_key()
    add_current(sqlite_store, [chunk("doc-new", "quokka " * 4 + "refund")])
    held.release.set()
    settle(index)
    assert label(index) == before  # read, and labelled with the key before the write

    assert [cid for cid, _ in hits(index, ["quokka"])] == ["doc-new@v1#s"]
    assert label(index) is None  # its key moved: dropped, not used
    for terms in (["quokka"], ["refund"], ["refund", "quokka", "fee"]):
        assert hits(index, terms, 50) == hits(reference, terms, 50)

    # The data stays put now: the next copy is read, is current, and answers the same.
    settle(index)
    assert label(index) == index._data_key() != before
    assert hits(index, ["refund", "quokka"], 50) == hits(reference, ["refund", "quokka"], 50)
    index.close()


def test_a_failed_read_is_logged_and_fts5_answers(sqlite_store: SQLiteStore) -> None:
    library(sqlite_store)

    def failing(conn: sqlite3.Connection) -> Postings | None:
        raise sqlite3.OperationalError("disk I/O error")

    index, reference = SQLiteSearchIndex(sqlite_store, read_copy=failing), only_fts5(sqlite_store)
    with capture_logs() as logs:
        for _ in range(2):
            assert hits(index, ["refund"]) == hits(reference, ["refund"])
        settle(index)
        assert hits(index, ["refund", "fee"]) == hits(reference, ["refund", "fee"])  # a retry
        settle(index)
    failures = [e for e in logs if e["event"] == "keyword postings read failed; FTS5 answers"]
    assert len(failures) == 2, logs
    assert failures[0]["log_level"] == "error"
    assert failures[0]["error"] == "OperationalError: disk I/O error"
    assert failures[0]["path"] == str(sqlite_store.path)
    assert index._copy is None
    index.close()


def test_close_interrupts_a_read_and_joins_its_thread(sqlite_store: SQLiteStore) -> None:
    library(sqlite_store)
    held = HeldRead()
    index = SQLiteSearchIndex(sqlite_store, read_copy=held)
    start_read(index, held, ["refund"])
    reader = index._reader
    assert reader is not None and reader.daemon
    closing = threading.Thread(target=index.close)
    with capture_logs() as logs:
        closing.start()
        held.release.set()
        closing.join(DEADLINE_S)
        assert not closing.is_alive() and not reader.is_alive()
    assert logs == []  # a read stopped by close() is not a failure
    assert index._copy is None
    hits(index, ["refund"])
    hits(index, ["refund"])
    assert held.calls == 1  # closed: no new read


def test_an_in_memory_store_reads_the_copy_in_line() -> None:
    memory = SQLiteStore(":memory:")
    memory.ensure_ready()
    try:
        library(memory)
        index, reference = SQLiteSearchIndex(memory), only_fts5(memory)
        assert hits(index, ["refund"]) == hits(reference, ["refund"])
        assert hits(index, ["refund"]) == hits(reference, ["refund"])  # reads it, no thread
        assert index._reader is None
        assert index._copy is not None and index._copy[1] is not None
        assert hits(index, ["refund", "fee"]) == hits(reference, ["refund", "fee"])
    finally:
        memory.close()
