"""The folder watcher of the embedded mode, started from settings.

``run_embedded`` calls ``start_folder_watcher(settings, embedded)`` once the
worker is built, and stops the returned thread before closing ``embedded``.
The watcher's state file lives beside the index and the queue
(``<embedded_dir>/folder-watch.sqlite3``).
"""

from __future__ import annotations

from pathlib import Path

from policy_indexer.embedded import Embedded
from policy_indexer.settings import Settings
from sources.watch import STATE_FILE, WatcherThread, start_watcher_thread


def watched_folder(settings: Settings) -> Path | None:
    """The folder to watch: ``source_path`` when ``source_kind`` is ``folder``, else None."""
    if settings.source_kind == "folder" and settings.source_path:
        return Path(settings.source_path)
    return None


def start_folder_watcher(settings: Settings, embedded: Embedded) -> WatcherThread | None:
    """Watch the library folder in a daemon thread, publishing to the embedded queue.

    Returns None when no folder is configured. Raises ``sources.SourceUnavailableError``
    (a ``SourceError``) when the folder is missing or the state file cannot be opened.
    """
    folder = watched_folder(settings)
    if folder is None:
        return None
    return start_watcher_thread(
        folder,
        embedded.publisher(),
        state_path=settings.embedded_dir / STATE_FILE,
        index=embedded.store,
        debounce_ms=settings.watch_debounce_ms,
        rescan_seconds=settings.watch_rescan_seconds,
    )
