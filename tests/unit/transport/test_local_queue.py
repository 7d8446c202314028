"""What the local queue adds to the transport contract: a small file and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from transport.local_clients import LocalQueueConsumer
from transport.local_queue import LocalQueue, QueueError


def test_committed_records_give_their_disk_space_back(tmp_path: Path) -> None:
    path = tmp_path / "queue.sqlite3"
    queue = LocalQueue(path)
    queue.append("t", [(b"doc", b"x" * 20_000) for _ in range(300)])  # ~6 MB
    consumer = LocalQueueConsumer(queue, "t")
    consumer.commit(consumer.poll(1000, 0.1))
    consumer.close()
    queue.close()
    assert path.stat().st_size < 200_000


def test_a_file_that_is_not_a_queue_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "queue.sqlite3"
    path.write_bytes(b"not a database" * 500)
    with pytest.raises(QueueError, match=r"queue\.sqlite3.*not a database"):
        LocalQueue(path)
