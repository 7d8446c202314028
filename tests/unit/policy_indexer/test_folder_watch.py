"""The embedded mode's folder watcher, started from settings."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from support.waiting import wait_until

from policy_indexer.runtime.backends import EmbeddedBackends
from policy_indexer.runtime.embedded import start_folder_watcher
from policy_indexer.settings import Settings
from sources.errors import SourceUnavailableError


def settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(embedded_dir=tmp_path / "data", kafka_topic=f"t-{uuid.uuid4().hex[:8]}",
                    **values)  # type: ignore[arg-type]


def test_the_configured_folder_is_watched_into_the_embedded_queue(tmp_path: Path) -> None:
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "refunds.md").write_text("## Window\n")
    s = settings(tmp_path, source_kind="folder", source_path=str(tmp_path / "library"))
    embedded = EmbeddedBackends.open(s)
    try:
        watcher = start_folder_watcher(s, embedded)
        assert watcher is not None
        assert watcher.folder == tmp_path / "library"
        wait_until(lambda: embedded.queue.pending(embedded.topic), 10,
                   "the watcher to queue the folder's document", every_s=0.02)
        watcher.stop()
        assert watcher.error is None
        assert embedded.queue.pending(embedded.topic) == 1
        assert (s.embedded_dir / "folder-watch.sqlite3").is_file()
    finally:
        embedded.close()


def test_no_folder_configured_means_no_watcher(tmp_path: Path) -> None:
    s = settings(tmp_path)
    embedded = EmbeddedBackends.open(s)
    try:
        assert start_folder_watcher(s, embedded) is None
    finally:
        embedded.close()


def test_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    s = settings(tmp_path, source_kind="folder", source_path=str(tmp_path / "nowhere"))
    embedded = EmbeddedBackends.open(s)
    try:
        with pytest.raises(SourceUnavailableError, match="nowhere"):
            start_folder_watcher(s, embedded)
    finally:
        embedded.close()
