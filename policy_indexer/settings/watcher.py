"""The folder watcher of the embedded mode.

It watches ``source_path`` when ``source_kind`` is 'folder' (the folder the
monitor and the nightly reindex list, so all three agree on ids and versions).
"""

from __future__ import annotations

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from watcher.timing import (
    DEBOUNCE_MS,
    RESCAN_SECONDS,
    RESTART_INITIAL_SECONDS,
    RESTART_MAX_SECONDS,
)


class WatcherSettings(BaseModel):
    """The watcher section of ``Settings``."""

    watch_debounce_ms: int = Field(
        DEBOUNCE_MS, ge=10, le=60_000,
        description="The folder watcher groups a burst of file changes for at most this long.",
    )
    watch_rescan_seconds: float = Field(
        RESCAN_SECONDS, gt=0,
        description="Without file changes, the watcher compares the folder again this often "
        "(retries a failed publish, catches changes the OS did not report).",
    )
    watch_restart_initial_seconds: float = Field(
        RESTART_INITIAL_SECONDS, gt=0,
        description="A folder watcher that failed starts again after this long, "
        "doubling at each failure in a row up to watch_restart_max_seconds.",
    )
    watch_restart_max_seconds: float = Field(
        RESTART_MAX_SECONDS, gt=0,
        description="The longest wait before a failed folder watcher starts again.",
    )

    @field_validator("watch_restart_max_seconds")
    @classmethod
    def _restart_bounds(cls, value: float, info: ValidationInfo) -> float:
        initial = info.data.get("watch_restart_initial_seconds")
        if initial is not None and value < initial:
            raise ValueError(f"watch_restart_max_seconds {value!r} is below "
                             f"watch_restart_initial_seconds {initial!r}")
        return value
