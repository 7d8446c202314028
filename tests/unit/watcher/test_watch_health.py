"""The embedded run's ``/healthz`` says when the folder watcher cannot go on."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Collection
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry
from support.waiting import wait_until
from support.webhook_helpers import MemoryPublisher

from policy_indexer.runtime.embedded import with_watcher
from policy_indexer.runtime.http import MetricsServer, always_ok
from watcher.folder_sync import FolderSync, SyncReport
from watcher.watch import FolderWatcher, WatcherThread
from watcher.watch_state import WatchState


class BrokenSync(FolderSync):
    failures = 10**6

    def sync(self, touched: Collection[str] = ()) -> SyncReport:
        if self.failures > 0:
            self.failures -= 1
            raise OSError(24, "Too many open files")
        return super().sync(touched)


def healthz(port: int) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_healthz_is_503_while_the_watcher_restarts_and_200_once_it_is_back(
    tmp_path: Path,
) -> None:
    (tmp_path / "library").mkdir()
    state = WatchState(tmp_path / "s.sqlite3")
    sync = BrokenSync(tmp_path / "library", MemoryPublisher(), state)
    watched: list[WatcherThread] = []
    server = MetricsServer("127.0.0.1", 0, CollectorRegistry(), with_watcher(always_ok, watched))
    server.start()
    thread = WatcherThread(FolderWatcher(sync, rescan_seconds=0.1), state,
                           restart_initial_s=0.1, restart_max_s=0.2).start()
    watched.append(thread)
    try:
        wait_until(lambda: healthz(server.port), 10, "/healthz to answer 503",
                   accept=lambda answer: answer[0] == 503)
        code, body = healthz(server.port)
        assert (code, body["status"]) == (503, "failed"), body
        assert "Too many open files" in body["folder_watcher"]["error"], body
        sync.failures = 0
        wait_until(lambda: healthz(server.port), 10, "/healthz to answer 200",
                   accept=lambda answer: answer[0] == 200)
        assert healthz(server.port)[1]["folder_watcher"]["restarts"] >= 1
    finally:
        thread.stop()
        server.stop()
