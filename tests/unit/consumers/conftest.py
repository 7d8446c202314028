"""The worker tests' real backends: a local queue and a SQLite index in the test's folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from transport.local_queue import LocalQueue


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[LocalQueue]:
    q = LocalQueue(tmp_path / "queue.sqlite3")
    yield q
    q.close()


