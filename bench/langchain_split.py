"""The baseline of bench_chunk_command.py: a Markdown file through LangChain's splitter.

    .venv/bin/python bench/langchain_split.py FILE

What a LangChain user would write for the job of ``policy-indexer chunk FILE``, as
one process: read the file, split it with ``MarkdownHeaderTextSplitter`` (h1-h6,
its defaults), print each piece as one JSON object a line (its text and its
metadata, the heading path).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from langchain_text_splitters import MarkdownHeaderTextSplitter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    content = parser.parse_args().file.read_text(encoding="utf-8")
    splitter = MarkdownHeaderTextSplitter([("#" * n, f"h{n}") for n in range(1, 7)])
    out = sys.stdout
    for piece in splitter.split_text(content):
        out.write(json.dumps({"page_content": piece.page_content, "metadata": piece.metadata}))
        out.write("\n")


if __name__ == "__main__":
    main()
