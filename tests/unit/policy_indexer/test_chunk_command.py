"""``policy-indexer chunk``: one JSON object per chunk, errors as clear messages."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from policy_indexer.cli import main

DOC = "---\ntitle: Refunds\n---\nintro\n\n# Rule\n\nWithin 30 days.\n\n# Other\n\nText.\n"


def test_chunk_prints_one_json_object_per_chunk(tmp_path: Path) -> None:
    path = tmp_path / "refund.md"
    path.write_text(DOC, encoding="utf-8")
    result = CliRunner().invoke(main, ["chunk", str(path), "--version", "4", "--check"])
    assert result.exit_code == 0, result.output
    chunks = [json.loads(line) for line in result.output.splitlines()]
    assert [c["chunk_id"] for c in chunks] == [
        "refund@v4#_preamble",
        "refund@v4#rule",
        "refund@v4#other",
    ]
    assert chunks[1]["embed_text"] == "Refunds > Rule\n# Rule\n\nWithin 30 days."


def test_chunk_reads_standard_input_with_options() -> None:
    html = "<h1>Title</h1><p>Body</p>"
    result = CliRunner().invoke(
        main,
        ["chunk", "-", "--document-id", "cms/42", "--content-type", "text/html"],
        input=html,
    )
    assert result.exit_code == 0, result.output
    (chunk,) = [json.loads(line) for line in result.output.splitlines()]
    assert chunk["chunk_id"] == "cms/42@v1#title"
    assert chunk["text"] == "Title\nBody"


def test_chunk_reports_bad_input_and_exits_non_zero() -> None:
    result = CliRunner().invoke(main, ["chunk", "-", "--document-id", "x"], input=b"# a\n\xff")
    assert result.exit_code == 1
    assert "not valid UTF-8" in result.output
    result = CliRunner().invoke(main, ["chunk", "-", "--min-tokens", "9", "--max-tokens", "5"])
    assert result.exit_code == 1
    assert "max_tokens" in result.output
