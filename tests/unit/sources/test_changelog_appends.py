"""A change log that only grows is read from where the last read stopped: the same
listing as a fresh read, after appends, a rewrite, a half-written line."""

from __future__ import annotations

import json
import random
from pathlib import Path

from sources.changelog import ChangeLogSource


def line(seq: int, doc: str, version: int, action: str = "upsert") -> str:
    record = {"seq": seq, "document_id": doc, "path": f"{doc}.md", "action": action,
              "version": version, "changed_at": f"2026-01-01T00:{seq % 60:02d}:00Z",
              "commit": "c", "content": "# T\n\nx"}
    return json.dumps(record) + "\n"


def fresh(path: Path) -> list[object]:
    return list(ChangeLogSource(path).list_documents())


def test_appends_give_the_listing_of_a_fresh_read(tmp_path: Path) -> None:
    path, rng = tmp_path / "log.jsonl", random.Random(3)
    path.write_text("".join(line(i, f"d{i % 7}", i + 1) for i in range(20)))
    source = ChangeLogSource(path)
    assert list(source.list_documents()) == fresh(path)
    seq = 20
    for _ in range(15):
        with path.open("a") as f:
            for _ in range(rng.randint(1, 4)):
                seq += 1
                f.write(line(seq, f"d{rng.randint(0, 9)}", seq + 1,
                             rng.choice(["upsert", "delete"])))
        assert source._appended() is not None  # read from the last end
        assert list(source.list_documents()) == fresh(path)


def test_a_rewrite_or_a_half_written_line_reads_the_whole_log(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(line(1, "a", 1) + line(2, "b", 1))
    source = ChangeLogSource(path)
    list(source.list_documents())
    path.write_text(line(1, "c", 1) + line(2, "d", 1) + line(3, "e", 1))  # rewritten, longer
    assert source._appended() is None
    assert [e.document_id for e in source.list_documents()] == ["c", "d", "e"]
    with path.open("a") as f:
        f.write(line(4, "f", 1)[:20])  # a line being written
    assert source._appended() is None
    with path.open("a") as f:
        f.write(line(4, "f", 1)[20:])
    assert [e.document_id for e in source.list_documents()] == ["c", "d", "e", "f"]
    with path.open("a") as f:
        f.write(line(5, "a", 2))
    assert source._appended() is not None
    assert list(source.list_documents()) == fresh(path)
