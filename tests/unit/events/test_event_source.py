"""The change event's ``source`` (one owner per document): a short name, or absent (unowned).

A bad name is refused naming the field and the value's rule; every ingress that builds
events stamps its own name (the folder watcher, the change-log reader; the webhook's in
``tests/unit/webhooks/test_webhook_owner.py``, the reconcile's in
``tests/unit/reindex/test_reconcile_owner.py``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError
from support.webhook_helpers import MemoryPublisher

from events.changelog import read_changelog
from events.model import Action, ChangeEvent
from watcher.folder_sync import FolderSync
from watcher.watch_state import WatchState


def event(source: object) -> ChangeEvent:
    return ChangeEvent.model_validate({
        "event_id": "e1", "document_id": "refunds", "action": "delete", "version": 2,
        "changed_at": datetime(2026, 1, 1, tzinfo=UTC), "source": source})


@pytest.mark.parametrize("name", ["folder", "cms", "git", "changelog", "contentful", "my_cms-2"])
def test_source_names_are_kept_through_json(name: str) -> None:
    sent = event(name)
    assert ChangeEvent.from_json_bytes(sent.to_json_bytes()).source == name


def test_an_event_without_source_is_unowned_and_its_json_has_none() -> None:
    old = json.dumps({"schema_version": 1, "event_id": "e1", "document_id": "refunds",
                      "action": "delete", "version": 2,
                      "changed_at": "2026-01-01T00:00:00+00:00"}).encode()
    parsed = ChangeEvent.from_json_bytes(old)  # as queued by a release before owners
    assert parsed.source is None
    assert "source" not in json.loads(parsed.to_json_bytes())


@pytest.mark.parametrize("bad", ["", "Folder", "cms!", "a" * 65, "with space", "1cms", 7])
def test_a_bad_source_name_is_refused_naming_the_field(bad: object) -> None:
    with pytest.raises(ValidationError) as refused:
        event(bad)
    assert [e["loc"] for e in refused.value.errors()] == [("source",)]


def test_the_folder_watcher_and_the_change_log_stamp_their_names(tmp_path: Path) -> None:
    root = tmp_path / "library"
    root.mkdir()
    (root / "refunds.md").write_text("# Refunds\n\nSixty days.\n")
    publisher = MemoryPublisher()
    sync = FolderSync(root, publisher, WatchState(tmp_path / "watch.sqlite3"))
    sync.sync()
    (root / "refunds.md").unlink()
    sync.sync()
    assert [(e.action, e.source) for e in publisher.events] == [
        (Action.UPSERT, "folder"), (Action.DELETE, "folder")]

    log = tmp_path / "changes.jsonl"
    log.write_text(json.dumps({"seq": 1, "document_id": "refunds", "path": "refunds.md",
                               "action": "upsert", "version": 1, "content": "# R\n",
                               "changed_at": "2026-01-01T00:00:00Z"}) + "\n")
    assert [e.source for e in read_changelog(log)] == ["changelog"]
