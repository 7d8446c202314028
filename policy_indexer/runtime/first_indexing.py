"""Progress of the first full indexing of ``policy-indexer run``, as log lines with counts.

Once the folder watcher has published the library (its start-up pass), the
thread logs ``indexing`` with ``done``/``of`` every ``every_s`` while the
queue drains, then prints one line when it is empty: documents and chunks in
the index and how long it took. Changes queued meanwhile (a webhook, an edit)
raise ``of``. It only reads the queue's length, so it costs nothing to the worker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

from policy_indexer.runtime.backends import EmbeddedBackends
from store.errors import StoreError
from transport.local_queue import QueueError
from watcher.watch import WatcherThread

log = structlog.get_logger(__name__)


class FirstIndexing:
    def __init__(
        self,
        embedded: EmbeddedBackends,
        watcher: WatcherThread | None,
        echo: Callable[[str], None],
        *,
        every_s: float = 2.0,
    ) -> None:
        self._embedded = embedded
        self._watcher = watcher
        self._echo = echo
        self._every_s = every_s
        self._stop = threading.Event()
        self.finished = threading.Event()

    def request_stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Until the first indexing is done (or ``request_stop``); run it in a ``ThreadPart``."""
        started = time.monotonic()
        watcher = self._watcher
        while watcher is not None and watcher.watcher.passes == 0 and watcher.is_alive():
            if self._stop.wait(0.05):
                return
        try:
            self._follow(started)
        except (QueueError, StoreError) as exc:
            log.warning("cannot report indexing progress", error=str(exc))

    def _follow(self, started: float) -> None:
        queue, topic = self._embedded.queue, self._embedded.topic
        total = queue.pending(topic)
        done = 0
        next_line = time.monotonic()
        while not self._stop.is_set():
            pending = queue.pending(topic)
            total = max(total, done + pending)
            done = total - pending
            if pending == 0:
                break
            if time.monotonic() >= next_line:
                log.info("indexing", done=done, of=total, queued=pending)
                next_line = time.monotonic() + self._every_s
            self._stop.wait(0.1)
        else:
            return
        store = self._embedded.store
        documents = sum(not s.deleted for s in store.iter_states())
        chunks = sum(store.count_chunks().values())
        seconds = time.monotonic() - started
        log.info("first indexing done", changes=total, documents=documents, chunks=chunks,
                 seconds=round(seconds, 2))
        self._echo(f"indexed: {documents} documents, {chunks} chunks "
                   f"({total} changes in {seconds:.1f} s); watching for changes")
        self.finished.set()
