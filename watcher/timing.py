"""The folder watcher's defaults, here once: ``watcher.watch`` and the watcher settings
take them. No imports, so the settings read them at start for free."""

from __future__ import annotations

# A burst of file changes is grouped for at most this long.
DEBOUNCE_MS = 400
# Without file changes, the folder is compared again this often.
RESCAN_SECONDS = 5.0
# A failed watcher starts again after this long, doubling up to RESTART_MAX_SECONDS.
RESTART_INITIAL_SECONDS = 1.0
RESTART_MAX_SECONDS = 60.0
