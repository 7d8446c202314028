"""What the local queue adds to the transport contract: a small file and clear errors."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from events.model import Action, ChangeEvent
from transport.local_clients import LocalQueueConsumer, LocalQueuePublisher
from transport.local_queue import LocalQueue, QueueError
from transport.publisher import PublishUnavailable

EVENT = ChangeEvent(event_id="e1", document_id="refund", action=Action.DELETE, version=2,
                    changed_at=datetime(2024, 1, 1, tzinfo=UTC))


def test_committed_records_give_their_disk_space_back(tmp_path: Path) -> None:
    path = tmp_path / "queue.sqlite3"
    queue = LocalQueue(path)
    queue.append("t", [(b"doc", b"x" * 20_000) for _ in range(300)])  # ~6 MB
    consumer = LocalQueueConsumer(queue, "t")
    consumer.subscribe()
    consumer.commit(consumer.poll(1000, 0.1))
    consumer.close()
    queue.close()
    assert path.stat().st_size < 200_000


def test_a_file_that_is_not_a_queue_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "queue.sqlite3"
    path.write_bytes(b"not a database" * 500)
    with pytest.raises(QueueError, match=r"queue\.sqlite3.*not a database"):
        LocalQueue(path)


def test_a_locked_queue_file_is_publish_unavailable_and_nothing_is_half_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "queue.sqlite3"
    queue = LocalQueue(path, busy_timeout_s=0.2)
    publisher = LocalQueuePublisher(queue, "t")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another process mid-write, for longer than we wait
    try:
        with pytest.raises(PublishUnavailable, match=r"queue\.sqlite3.*locked"):
            publisher.publish(EVENT)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert queue.pending("t") == 0
    publisher.publish(EVENT)  # the caller's retry (the CMS's, after a 503) goes through
    assert queue.pending("t") == 1
    queue.close()


def test_wakeup_ends_a_poll_at_once_and_only_that_poll(tmp_path: Path) -> None:
    """A worker asked to stop does not wait out its poll's timeout (a replay's last 0.5 s)."""
    import threading
    import time

    queue = LocalQueue(tmp_path / "queue.sqlite3")
    consumer = LocalQueueConsumer(queue, "changes")
    consumer.subscribe()
    polled: list[float] = []

    def poll() -> None:
        start = time.monotonic()
        assert consumer.poll(10, timeout_s=30.0) == []
        polled.append(time.monotonic() - start)

    thread = threading.Thread(target=poll)
    thread.start()
    time.sleep(0.2)
    consumer.wakeup()
    thread.join(5.0)
    assert polled and polled[0] < 5.0
    start = time.monotonic()
    assert consumer.poll(10, timeout_s=0.3) == []  # the next poll waits again
    assert time.monotonic() - start >= 0.25
    consumer.close()
    queue.close()
