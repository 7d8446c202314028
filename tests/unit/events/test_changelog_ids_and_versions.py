"""Look-alike ids and versions out of range on the change-log path: ``replay`` and the
change-log source refuse, naming the file and line, a look-alike id and a version above
what a source may stamp, as the webhook does (422)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from events.changelog import ChangeLogError, read_changelog
from events.model import MAX_SOURCE_VERSION, MAX_VERSION
from sources.changelog import ChangeLogSource
from sources.errors import SourceDataError


def log_with(tmp_path: Path, **bad: object) -> Path:
    good = {"seq": 1, "document_id": "refunds", "path": "refunds.md", "action": "upsert",
            "version": 3, "changed_at": "2026-01-15T10:00:00Z", "commit": "c1",
            "content": "## Refunds\nWithin 30 days.\n"}
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "seq": 2, **bad}) + "\n")
    return path


@pytest.mark.parametrize(("bad", "words"), [
    ({"document_id": "refunds\u200b"}, "U+200B"),
    ({"document_id": "refunds "}, "whitespace"),
    ({"document_id": "./refunds"}, "segment"),
    ({"document_id": "cafe\u0301"}, "NFC"),
    ({"version": MAX_VERSION}, "above the maximum"),
    ({"version": MAX_SOURCE_VERSION + 1}, "above the maximum"),
], ids=["zero-width", "trailing space", "./", "NFD", "2^53-1", "top+1"])
def test_replay_and_the_change_log_source_refuse_the_line(
    tmp_path: Path, bad: dict[str, object], words: str
) -> None:
    path = log_with(tmp_path, **bad)
    with pytest.raises(ChangeLogError, match=r"log\.jsonl:2") as caught:
        list(read_changelog(path))
    assert words in str(caught.value)
    with pytest.raises(SourceDataError, match=r"log\.jsonl:2") as listed:
        list(ChangeLogSource(path).list_documents())
    assert words in str(listed.value)


def test_the_largest_version_a_source_may_stamp_replays(tmp_path: Path) -> None:
    path = log_with(tmp_path, version=MAX_SOURCE_VERSION)
    assert [e.version for e in read_changelog(path)] == [3, MAX_SOURCE_VERSION]
