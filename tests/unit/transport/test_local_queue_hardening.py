"""Lease holders and dead letters on the real queue file: a dead or zombie lease holder
is gone, one dead letter per failed event however often it is redelivered or resent,
and a retry moves it."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from support.waiting import wait_until

from transport.local_queue import (
    ConsumerBusy,
    LocalQueue,
    StoredDeadLetter,
    _pid_alive,
)


def zombie() -> subprocess.Popen[bytes]:
    """A child that has exited and that nobody has waited for yet."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    stat = Path(f"/proc/{child.pid}/stat")
    wait_until(lambda: stat.read_text().rpartition(")")[2].split()[0] == "Z", 10,
               "the child to become a zombie")
    return child


def take_lease_as(queue: LocalQueue, topic: str, pid: int) -> None:
    queue.take_lease(topic, 15.0)
    queue._conn.execute("UPDATE consumer_leases SET pid = ? WHERE topic = ?", (pid, topic))


def test_a_lease_held_by_a_zombie_is_taken_over(tmp_path: Path) -> None:
    queue = LocalQueue(tmp_path / "queue.sqlite3")
    child = zombie()
    try:
        assert not _pid_alive(child.pid)  # before the fix: kill(pid, 0) said alive
        take_lease_as(queue, "t", child.pid)
        queue.take_lease("t", 15.0)  # no ConsumerBusy
    finally:
        child.wait()
        queue.close()


def test_a_lease_held_by_a_live_process_is_refused_naming_it(tmp_path: Path) -> None:
    queue = LocalQueue(tmp_path / "queue.sqlite3")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        take_lease_as(queue, "t", child.pid)
        with pytest.raises(ConsumerBusy, match=f"pid {child.pid}"):
            queue.take_lease("t", 15.0)
    finally:
        child.kill()
        child.wait()
        queue.close()


def letter(value: bytes, offset: int, reason: str = "schema") -> StoredDeadLetter:
    return StoredDeadLetter(b"refund", value, reason, "version: too big", "t", 0, offset, 1.0)


def event_bytes(event_id: str, version: int, received: str = "2024-01-01T00:00:00Z") -> bytes:
    return json.dumps({"event_id": event_id, "document_id": "refund", "version": version,
                       "received_at": received}).encode()


def test_one_dead_letter_per_failed_event_across_redelivery_and_resends(tmp_path: Path) -> None:
    queue = LocalQueue(tmp_path / "queue.sqlite3")
    assert queue.add_dead_letter("dlq", letter(event_bytes("e1", 2**63), 5))
    assert not queue.add_dead_letter("dlq", letter(event_bytes("e1", 2**63), 5))  # redelivered
    # The same change sent again at the next start: a new event id and receive time.
    assert not queue.add_dead_letter(
        "dlq", letter(event_bytes("e2", 2**63, "2024-01-02T00:00:00Z"), 9))
    # A different failed event of the same document is its own dead letter.
    assert queue.add_dead_letter("dlq", letter(event_bytes("e3", 2**64), 10))
    assert queue.add_dead_letter("dlq", letter(b"\xff not json", 11, "not_json"))
    assert not queue.add_dead_letter("dlq", letter(b"\xff not json", 12, "not_json"))
    assert [d.source_offset for d in queue.dead_letters("dlq")] == [5, 10, 11]
    queue.close()


def test_a_file_from_before_the_fingerprint_opens_and_keeps_its_letters(tmp_path: Path) -> None:
    path = tmp_path / "queue.sqlite3"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE dead_letters (id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL,
            key BLOB, value BLOB, reason TEXT NOT NULL, error TEXT NOT NULL,
            source_topic TEXT NOT NULL, source_partition INTEGER NOT NULL,
            source_offset INTEGER NOT NULL, dead_at REAL NOT NULL);
        INSERT INTO dead_letters(topic, key, value, reason, error, source_topic,
            source_partition, source_offset, dead_at)
        VALUES ('dlq', 'a', 'x', 'schema', 'e', 't', 0, 1, 1.0),
               ('dlq', 'a', 'x', 'schema', 'e', 't', 0, 1, 1.0);
    """)
    old.close()
    queue = LocalQueue(path)
    assert len(queue.dead_letters("dlq")) == 2
    assert queue.add_dead_letter("dlq", letter(b"x", 3))
    assert not queue.add_dead_letter("dlq", letter(b"x", 3))
    queue.close()


def test_a_retry_moves_the_letter_back_onto_the_topic(tmp_path: Path) -> None:
    queue = LocalQueue(tmp_path / "queue.sqlite3")
    queue.add_dead_letter("dlq", letter(b"first", 1))
    queue.add_dead_letter("dlq", letter(b"second", 2))
    (first_id, _), _ = queue.numbered_dead_letters("dlq")
    assert queue.requeue_dead_letters("dlq", "t", [first_id, 999]) == 1
    assert [d.value for d in queue.dead_letters("dlq")] == [b"second"]
    assert [(d.key, d.value) for d in queue.read("t", 0, 10)] == [(b"refund", b"first")]
    queue.close()
