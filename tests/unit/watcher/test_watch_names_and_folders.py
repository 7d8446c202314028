"""Names that are not UTF-8 and unlistable folders at the watcher: one file or one folder
never stops it.

- a file whose name is not UTF-8 makes watchfiles' notifier raise on every wait
  from then on; the watcher makes a new notifier and compares the whole folder,
  never restarts, and what comes after is published;
- a sub-folder it may not list (in a child without CAP_DAC_OVERRIDE and
  CAP_DAC_READ_SEARCH: the tests run as root, and root lists mode 000): the
  watcher starts anyway, publishes edits elsewhere, sends no delete for what it
  published under the folder, says ``degraded`` with the folder named; once the
  folder can be listed again, an edit made meanwhile is published and health is
  ``ok``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from support.waiting import wait_until
from support.webhook_helpers import MemoryPublisher

from policy_indexer.runtime.embedded import with_watcher
from policy_indexer.runtime.http import MetricsServer, always_ok
from watcher.folder_sync import FolderSync
from watcher.watch import FolderWatcher, WatcherThread, start_watcher_thread
from watcher.watch_state import WatchState

TESTS = Path(__file__).resolve().parents[2]


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, MemoryPublisher, WatcherThread]]:
    root = tmp_path / "library"
    root.mkdir()
    (root / "a.md").write_text("## A\n")
    publisher = MemoryPublisher()
    thread = start_watcher_thread(root, publisher, state_path=tmp_path / "state.sqlite3",
                                  debounce_ms=50, rescan_seconds=0.3,
                                  restart_initial_s=0.1, restart_max_s=0.2)
    try:
        yield root, publisher, thread
    finally:
        thread.stop()


def ids(publisher: MemoryPublisher) -> list[str]:
    return [e.document_id for e in publisher.events]


def test_a_name_that_is_not_utf8_never_restarts_the_watcher(
    watched: tuple[Path, MemoryPublisher, WatcherThread],
) -> None:
    root, publisher, thread = watched
    wait_until(lambda: ids(publisher), 10, "the start-up pass", accept=lambda i: i == ["a"])
    fd = os.open(os.fsencode(root) + b"/caf\xe9.md", os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"## Caf\xc3\xa9\n")
    os.close(fd)
    wait_until(lambda: thread.watcher.reopened, 10, "the notifier to be made again",
               accept=lambda n: n >= 1)
    (root / "b.md").write_text("## B\n")
    wait_until(lambda: ids(publisher), 10, "the next file to be published",
               accept=lambda i: "b" in i)
    fd = os.open(os.fsencode(root) + b"/caf\xe9.md", os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"more\n")  # touched again: one more new notifier, still no restart
    os.close(fd)
    (root / "c.md").write_text("## C\n")
    wait_until(lambda: ids(publisher), 10, "a later file to be published",
               accept=lambda i: "c" in i)
    assert ids(publisher) == ["a", "b", "c"]  # the bad name never published
    assert thread.health() == {"status": "ok", "restarts": 0}
    assert thread.watcher.reopened >= 1


_CHILD = """
import json, os, sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from support.waiting import wait_until
from support.webhook_helpers import MemoryPublisher
from watcher.watch import start_watcher_thread

root, out = Path(sys.argv[1]), {}
publisher = MemoryPublisher()

def seen():
    return [[e.document_id, e.action.value] for e in publisher.events]

def status():
    return thread.health()["status"]

def diagnostics():
    return json.dumps({**out, "events": seen(), "health": thread.health()})

private = root / "private"
thread = start_watcher_thread(root, publisher, state_path=root.parent / "state.sqlite3",
                              debounce_ms=50, rescan_seconds=0.3,
                              restart_initial_s=0.1, restart_max_s=0.2)
wait_until(seen, 15, "start-up", accept=lambda s: len(s) == 3, on_timeout=diagnostics)
private.chmod(0o000)
wait_until(status, 15, "degraded", accept=lambda s: s == "degraded", on_timeout=diagnostics)
out["degraded"] = thread.health()
(root / "refunds.md").write_text("## Refunds\\nWithin 60 days.\\n")
wait_until(lambda: seen()[3:], 15, "edit elsewhere", accept=lambda s: ["refunds", "upsert"] in s,
           on_timeout=diagnostics)
out["while_unlisted"] = seen()[3:]
private.chmod(0o755)
(private / "salaries.md").write_text("## Salaries\\nEdited while unlistable.\\n")
wait_until(lambda: seen()[4:], 15, "folder back",
           accept=lambda s: ["private/salaries", "upsert"] in s, on_timeout=diagnostics)
wait_until(status, 15, "ok", accept=lambda s: s == "ok", on_timeout=diagnostics)
out["after"] = seen()[4:]
out["health"] = thread.health()
thread.stop()

# Started while the folder cannot be listed: the notifier is made anyway.
private.chmod(0o000)
publisher2 = MemoryPublisher()
thread = start_watcher_thread(root, publisher2, state_path=root.parent / "state.sqlite3",
                              debounce_ms=50, rescan_seconds=0.3,
                              restart_initial_s=0.1, restart_max_s=0.2)
publisher = publisher2
wait_until(status, 15, "degraded at start", accept=lambda s: s == "degraded",
           on_timeout=diagnostics)
(root / "refunds.md").write_text("## Refunds\\nWithin 90 days.\\n")
wait_until(seen, 15, "edit after start", accept=lambda s: ["refunds", "upsert"] in s,
           on_timeout=diagnostics)
out["restarted"] = {"events": seen(), "health": thread.health()}
thread.stop()
private.chmod(0o755)
print(json.dumps(out))
"""


def test_an_unlistable_sub_folder_is_kept_and_the_rest_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "library"
    (root / "private").mkdir(parents=True)
    (root / "refunds.md").write_text("## Refunds\nWithin 30 days.\n")
    (root / "private" / "salaries.md").write_text("## Salaries\n")
    (root / "private" / "bonus.md").write_text("## Bonus\n")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("setpriv (util-linux) is missing: the unlistable case needs it")
    caps = "-dac_override,-dac_read_search"
    try:
        done = subprocess.run(
            [setpriv, f"--bounding-set={caps}", f"--inh-caps={caps}", sys.executable, "-c",
             _CHILD, str(root), str(TESTS)],
            capture_output=True, text=True, timeout=120, check=False,
        )
    finally:
        (root / "private").chmod(0o755)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["degraded"] == {"status": "degraded", "unlisted": ["private/"],
                               "unlisted_count": 1, "restarts": 0}
    assert out["while_unlisted"] == [["refunds", "upsert"]]  # no delete for private/*
    assert out["after"] == [["private/salaries", "upsert"]]
    assert out["health"] == {"status": "ok", "restarts": 0}
    restarted = out["restarted"]
    assert restarted["events"] == [["refunds", "upsert"]], restarted
    assert restarted["health"]["status"] == "degraded" and restarted["health"]["restarts"] == 0


def probe(port: int, path: str) -> tuple[int, dict[str, Any]]:
    response = httpx.get(f"http://127.0.0.1:{port}{path}", timeout=5)
    body: dict[str, Any] = response.json()
    return response.status_code, body


def test_probes_degraded_is_up_and_ready_failing_is_up_and_not_ready(tmp_path: Path) -> None:
    """An unlistable sub-folder is a degraded watcher: /healthz and /readyz 200, the folder
    named in the body. Passes that fail (the root or the index unreadable): /healthz 200
    (a restart would not mend it), /readyz 503; only a watcher that restarts is 503 on both."""
    (tmp_path / "library").mkdir()
    state = WatchState(tmp_path / "s.sqlite3")
    sync = FolderSync(tmp_path / "library", MemoryPublisher(), state)
    thread = WatcherThread(FolderWatcher(sync), state)  # not started: its state set by hand
    server = MetricsServer("127.0.0.1", 0, CollectorRegistry(), with_watcher(always_ok, [thread]))
    server.start()
    try:
        thread.watcher.unlisted = ["private/"]
        for path in ("/healthz", "/readyz"):
            code, body = probe(server.port, path)
            assert (code, body["status"]) == (200, "ok"), (path, body)
            assert body["folder_watcher"]["status"] == "degraded", body
            assert body["folder_watcher"]["unlisted"] == ["private/"], body
        thread.watcher.failed_passes, thread.watcher.last_error = 3, "cannot list /lib"
        assert probe(server.port, "/healthz")[0] == 200
        code, body = probe(server.port, "/readyz")
        assert (code, body["status"]) == (503, "failing"), body
    finally:
        server.stop()
        state.close()
