"""Watch a folder of policy files and publish a change event for every change.

``FolderWatcher.run()`` first compares the folder with what was published
and indexed (``FolderSync.sync``: changes made while no watcher ran are sent
at start-up), then waits on the file system with watchfiles' notifier
(inotify on Linux, FSEvents on macOS) and runs the same comparison after each burst of changes.
Changes are grouped for ``debounce_ms`` at most, and a burst ends after
``step_ms`` of quiet, so an editor's write-rename-chmod sequence is one pass.
Every ``rescan_seconds`` without changes, the folder is compared again anyway:
that retries a publish that failed and catches anything the operating system
did not report (an overflowed inotify queue, a network file system); with
unchanged files this costs one ``stat`` per file.

Only document files matter (``*.md``, ``*.html``, ``*.htm``, see
``sources.folder``); editor temporary files (``.x.md.swp``, ``x.md~``,
``#x.md#``, ``.#x.md``, ``x.md___jb_tmp___``) and hidden folders never start
a pass. Because every pass compares the whole folder, a renamed or deleted
folder is handled like the files inside it.

``start_watcher_thread`` runs a watcher in a daemon thread for a process
that does other work (the embedded ``policy-indexer run``).

A bad file never stops the watcher (``sources.folder`` lists it as unreadable
and the pass goes on). A watcher that cannot go on (an unexpected error, the
notifier failing, the folder gone) does not die silently: the thread logs
it, says so in ``health()`` (``failed``, with the error, which the embedded
``/healthz`` serves as 503), and starts the watcher again after a backoff that
doubles from ``restart_initial_s`` up to ``restart_max_s``; the restarted
watcher's first pass is a start-up pass (every file read, the index compared),
so nothing changed meanwhile is missed. Passes that fail because the folder
or the index cannot be read now are retried at each rescan; three in a row
make ``health()`` say ``failing``. A sub-folder that cannot be listed does not
fail a pass: the rest is compared, its documents are kept, and ``health()``
says ``degraded`` with the folders named (liveness and readiness stay up).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
import watchfiles
from watchfiles._rust_notify import RustNotify, WatchfilesRustInternalError

from sources.errors import SourceError, SourceUnavailableError
from sources.folder import DEFAULT_MAX_FILE_BYTES, is_document_name
from sources.hidden import hidden_component, parse_hidden_allow
from sources.label_defaults import NO_DEFAULTS, RawDefaults, parse_label_defaults
from store.errors import StoreError
from transport.publisher import EventPublisher
from watcher.folder_sync import FolderSync, IndexStates, SyncReport
from watcher.timing import (
    DEBOUNCE_MS,
    RESCAN_SECONDS,
    RESTART_INITIAL_SECONDS,
    RESTART_MAX_SECONDS,
)
from watcher.watch_state import WatchState

log = structlog.get_logger(__name__)

STATE_FILE = "folder-watch.sqlite3"
FAILING_AFTER_PASSES = 3  # failed passes in a row before health() says "failing"
# watchfiles' error for a changed path that is not UTF-8 (its notifier is unusable after it)
_UNDECODABLE = "Unable to decode path"
MAX_UNLISTED_SHOWN = 20  # sub-folders named in health(); the count says how many in all


@dataclass(frozen=True)
class RelevantChanges:
    """watchfiles filter: a change that can alter the library below ``root``.

    A document file, or a name without a dot (a folder, renamed or deleted);
    nothing hidden, nothing in a hidden folder (``.git``, swap files).
    """

    root: Path
    hidden_allow: frozenset[str] = frozenset()  # hidden names that are part of the library

    def __call__(self, _change: watchfiles.Change, path: str) -> bool:
        try:
            parts = Path(path).relative_to(self.root).parts
        except ValueError:
            return True  # outside the root (the root itself moved): compare again
        if not parts or hidden_component(parts, self.hidden_allow) is not None:
            return bool(not parts)
        name = parts[-1]
        return is_document_name(name, self.hidden_allow) or (
            "." not in name and not name.endswith(("~", "#")))


@dataclass
class FolderWatcher:
    sync: FolderSync
    debounce_ms: int = DEBOUNCE_MS
    step_ms: int = 50
    rescan_seconds: float = RESCAN_SECONDS
    stop_event: threading.Event = field(default_factory=threading.Event)
    passes: int = field(default=0, init=False)
    good_passes: int = field(default=0, init=False)
    failed_passes: int = field(default=0, init=False)  # in a row; 0 after a good pass
    last_error: str | None = field(default=None, init=False)
    unlisted: list[str] = field(default_factory=list, init=False)  # at the last good pass
    reopened: int = field(default=0, init=False)  # notifiers made again (names not UTF-8)
    _touched: set[str] = field(default_factory=set, init=False)

    def run(self) -> None:
        """Publish until ``stop()``; raises ``SourceUnavailableError`` if the folder is missing."""
        root = self.sync.root
        if not root.is_dir():
            raise SourceUnavailableError(f"folder to watch {str(root)!r} is not a folder")
        resolved = root.resolve()
        relevant = RelevantChanges(resolved, self.sync.source.hidden_allow)
        timeout_ms = max(1, int(self.rescan_seconds * 1000))
        log.info("watching folder", folder=str(root))
        while not self.stop_event.is_set():
            # watchfiles.watch() would only start watching at its first wait; its Rust
            # notifier (the same class watch() uses) collects changes from the moment it
            # exists, so the pass below misses nothing made while it runs. A sub-folder it
            # may not read is left unwatched (ignore_permission_denied) instead of failing
            # the whole notifier: the pass reports it, and once it can be listed again the
            # notifier is made again to watch it.
            with RustNotify([str(resolved)], False, False, 300, True, True) as notify:
                self._pass()  # the start-up pass, or the whole folder after a reopen
                if not self._follow(notify, resolved, relevant, timeout_ms):
                    break
        log.info("folder watcher stopped", folder=str(root))

    def _follow(self, notify: RustNotify, resolved: Path, relevant: RelevantChanges,
                timeout_ms: int) -> bool:
        """Pass after each burst until ``stop()`` (False), or True: the notifier must be
        made again (a change to a name that is not UTF-8: watchfiles cannot hand it over,
        and keeps raising on every later wait; or a sub-folder it could not watch can be
        listed again)."""
        unwatched = set(self.unlisted)
        while not self.stop_event.is_set():
            try:
                raw = notify.watch(self.debounce_ms, self.step_ms, timeout_ms, self.stop_event)
            except WatchfilesRustInternalError as exc:
                if _UNDECODABLE not in str(exc):
                    raise
                self.reopened += 1
                log.warning("a file whose name is not UTF-8 changed: the notifier is made again "
                            "and the whole folder compared", error=str(exc)[:300],
                            reopened=self.reopened)
                return True
            if raw == "stop":
                return False
            if isinstance(raw, str):  # "timeout" (or "signal"): compare anyway
                self._pass()
            else:
                touched = {
                    _relative(resolved, path) for change, path in raw
                    if relevant(watchfiles.Change(change), path)
                }
                if touched:
                    self._pass(touched)
            if unwatched - set(self.unlisted):
                log.info("sub-folders can be listed again: the notifier is made again to watch "
                         "them", folders=sorted(unwatched - set(self.unlisted)))
                return True
        return False

    def _pass(self, touched: set[str] | None = None) -> SyncReport | None:
        """One comparison; a failed one keeps its touched paths for the next."""
        self._touched |= touched or set()
        try:
            report = self.sync.sync(self._touched)
        except (SourceError, StoreError) as exc:  # folder or index not readable now
            log.error("folder comparison failed; retrying", folder=str(self.sync.root),
                      error=str(exc))
            self.failed_passes += 1
            self.last_error = str(exc)
            return None
        finally:
            self.passes += 1
        self.failed_passes, self.last_error = 0, None
        if report.unlisted != self.unlisted:
            if report.unlisted:
                log.error("sub-folders cannot be listed: their documents are kept as they were, "
                          "the rest is indexed", folder=str(self.sync.root),
                          unlisted=report.unlisted)
            else:
                log.info("every sub-folder can be listed again", folder=str(self.sync.root))
        self.unlisted = report.unlisted
        self.good_passes += 1
        changes = len(self._touched)
        if not report.publish_failed:
            self._touched = set()
        if report.upserts or report.deletes or report.skipped_files or changes:
            log.info("folder compared", changes=changes, upserts=report.upserts,
                     deletes=report.deletes, skipped_files=report.skipped_files,
                     publish_failed=report.publish_failed)
        return report

    def stop(self) -> None:
        self.stop_event.set()


def _relative(root: Path, path: str) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


class WatcherThread:
    """A ``FolderWatcher`` in a daemon thread that restarts it with backoff when it fails.

    ``error`` is the exception that ended the thread (only a ``BaseException``
    that is not an ``Exception``, such as ``SystemExit``, ends it); an ordinary
    failure is kept in ``health()`` while the watcher waits to start again.
    """

    def __init__(
        self,
        watcher: FolderWatcher,
        state: WatchState,
        *,
        restart_initial_s: float = RESTART_INITIAL_SECONDS,
        restart_max_s: float = RESTART_MAX_SECONDS,
    ) -> None:
        if not 0 < restart_initial_s <= restart_max_s:
            raise ValueError(f"restart_initial_s {restart_initial_s!r} must be > 0 and at most "
                             f"restart_max_s {restart_max_s!r}")
        self.watcher = watcher
        self.error: BaseException | None = None
        self.restarts = 0
        self.restart_initial_s = restart_initial_s
        self.restart_max_s = restart_max_s
        self._failure: str | None = None  # the failure being recovered from
        self._good_at_failure = 0  # the watcher's good passes then: one more clears it
        self._state = state
        self._thread = threading.Thread(target=self._run, name="folder-watcher", daemon=True)

    def _run(self) -> None:
        delay = self.restart_initial_s
        stop = self.watcher.stop_event
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.watcher.run()
                return
            except Exception as exc:  # any failure: say so, start again
                self._failure = f"{type(exc).__name__}: {exc}"
                self._good_at_failure = self.watcher.good_passes
                log.error("folder watcher failed; restarting", error=repr(exc),
                          restart_in_s=delay, restarts=self.restarts)
            except BaseException as exc:  # SystemExit and the like: the process is ending
                log.error("folder watcher failed", error=repr(exc))
                self.error = exc
                return
            if time.monotonic() - started > self.restart_max_s:
                delay = self.restart_initial_s  # it had been running for long: a fresh failure
            if stop.wait(delay):
                return
            delay = min(delay * 2, self.restart_max_s)
            self.restarts += 1
            self.watcher.sync.restart()

    def health(self) -> dict[str, Any]:
        """``ok``; ``failed`` while restarting after a failure; ``failing`` after failed passes;
        ``degraded`` (with ``unlisted``, the sub-folders) while passes complete but some
        sub-folders cannot be listed: the rest is indexed, their documents kept.

        ``failed`` lasts until the restarted watcher completes a pass.
        """
        watcher = self.watcher
        if self._failure is not None and watcher.good_passes > self._good_at_failure:
            self._failure = None  # the restarted watcher compared the folder: recovered
        if not self._thread.is_alive() and self._thread.ident is not None \
                and not watcher.stop_event.is_set():
            return {"status": "failed", "error": repr(self.error), "restarts": self.restarts}
        if self._failure is not None:
            return {"status": "failed", "error": self._failure, "restarts": self.restarts}
        if watcher.failed_passes >= FAILING_AFTER_PASSES:
            return {"status": "failing", "error": watcher.last_error,
                    "failed_passes": watcher.failed_passes, "restarts": self.restarts}
        if watcher.unlisted:
            shown = watcher.unlisted[:MAX_UNLISTED_SHOWN]
            return {"status": "degraded", "unlisted": shown, "unlisted_count":
                    len(watcher.unlisted), "restarts": self.restarts}
        return {"status": "ok", "restarts": self.restarts}

    @property
    def folder(self) -> Path:
        """The folder watched (for the start-up banner)."""
        return self.watcher.sync.root

    def start(self) -> WatcherThread:
        self._thread.start()
        return self

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop watching, wait for the current pass to end, close the state file."""
        self.watcher.stop()
        self._thread.join(timeout_s)
        if not self._thread.is_alive():
            self._state.close()


def start_watcher_thread(
    folder: str | Path,
    publisher: EventPublisher,
    *,
    state_path: str | Path,
    index: IndexStates | None = None,
    debounce_ms: int = DEBOUNCE_MS,
    rescan_seconds: float = RESCAN_SECONDS,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    restart_initial_s: float = RESTART_INITIAL_SECONDS,
    restart_max_s: float = RESTART_MAX_SECONDS,
    hidden_allow: str | Collection[str] = (),
    allow_hard_links: bool = False,
    default_access_labels: RawDefaults = NO_DEFAULTS,
) -> WatcherThread:
    """Watch ``folder`` in a thread, publishing to ``publisher``; returns the running thread.

    ``state_path``: the watcher's state file (``STATE_FILE`` beside the index is
    the usual place). ``index``: the store the events end up in (its states
    are a version floor and the start-up comparison). ``max_file_bytes``: larger
    files are reported as unreadable. ``restart_*``: the backoff of a watcher
    that failed (see the module docstring). ``hidden_allow``, ``allow_hard_links``,
    ``default_access_labels``: see ``sources.folder.MarkdownFolderSource``. Raises
    ``SourceUnavailableError`` when the folder or the state file cannot be opened.
    """
    root = Path(folder)
    if not root.is_dir():
        raise SourceUnavailableError(f"folder to watch {str(root)!r} is not a folder")
    state = WatchState(state_path)
    sync = FolderSync(root, publisher, state, index=index, max_file_bytes=max_file_bytes,
                      hidden_allow=parse_hidden_allow(hidden_allow),
                      allow_hard_links=allow_hard_links,
                      default_access_labels=parse_label_defaults(default_access_labels))
    watcher = FolderWatcher(sync, debounce_ms=debounce_ms, rescan_seconds=rescan_seconds)
    return WatcherThread(watcher, state, restart_initial_s=restart_initial_s,
                         restart_max_s=restart_max_s).start()
