from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from events.changelog import ChangeLogError, count_lines, read_changelog
from events.model import Action

LINES = [
    {"seq": 1, "document_id": "refund", "path": "refund/index.md", "action": "upsert",
     "version": 1, "changed_at": "2018-06-01T17:02:44Z", "commit": "9d97", "content": "# Hi\n"},
    {"seq": 2, "document_id": "refund", "path": "refund/index.md", "action": "delete",
     "version": 2, "changed_at": "2018-07-01T00:00:00Z", "commit": "aa"},
]


def write(path: Path, lines: Sequence[object]) -> Path:
    text = "".join(json.dumps(line) + "\n" for line in lines)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("name", ["log.jsonl", "log.jsonl.gz"])
def test_a_change_log_reads_as_change_events(tmp_path: Path, name: str) -> None:
    events = list(read_changelog(write(tmp_path / name, LINES)))
    assert [(e.event_id, e.action, e.version) for e in events] == [
        ("log:1", Action.UPSERT, 1), ("log:2", Action.DELETE, 2)
    ]
    assert events[0].content == "# Hi\n" and events[0].content_type == "text/markdown"
    assert events[0].metadata.source_path == "refund/index.md"
    assert events[1].content is None
    assert count_lines(tmp_path / name) == 2


@pytest.mark.parametrize(
    "bad",
    ["not json", {**LINES[0], "action": "rename"}, {**LINES[0], "version": 0},
     {k: v for k, v in LINES[0].items() if k != "document_id"}],
)
def test_a_bad_line_names_the_file_and_line(tmp_path: Path, bad: object) -> None:
    path = tmp_path / "log.jsonl"
    second = bad if isinstance(bad, str) else json.dumps(bad)
    path.write_text(json.dumps(LINES[0]) + "\n" + second + "\n")
    with pytest.raises(ChangeLogError, match=r"log.jsonl:2"):
        list(read_changelog(path))


@pytest.mark.corpus
def test_the_basecamp_log_reads_whole(corpora_dir: Path) -> None:
    events = list(read_changelog(corpora_dir / "basecamp-policies.jsonl"))
    assert len(events) == 362
    assert sum(e.action is Action.DELETE for e in events) == 36
