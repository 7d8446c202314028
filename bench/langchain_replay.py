"""The baseline of bench_embedded_langchain.py: a change log through LangChain's ``index()``.

    .venv/bin/python bench/langchain_replay.py CHANGELOG [--limit N]

What a LangChain user would write for the same job, as one process: read the
log, split each upsert with ``MarkdownHeaderTextSplitter`` (h1-h6), and hand
the pieces to ``langchain_core.indexing.index`` with an ``InMemoryRecordManager``
and an ``InMemoryVectorStore`` (cleanup ``incremental``, source id = document
id), so a new version replaces the old one's pieces; a delete removes the
document's pieces through the record manager. The embedding is LangChain's
``DeterministicFakeEmbedding`` (a seeded random vector per text, no model): the
embedded replay computes no vectors either (it analyses terms instead), so
neither side pays for a model. Prints the changes, documents and pieces held.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
from collections.abc import Iterator
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.indexing import InMemoryRecordManager, index
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import MarkdownHeaderTextSplitter


def changes(path: Path) -> Iterator[dict[str, object]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("changelog", type=Path)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    splitter = MarkdownHeaderTextSplitter([("#" * n, f"h{n}") for n in range(1, 7)])
    records = InMemoryRecordManager("bench")
    records.create_schema()
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=384))
    seen = 0
    for change in itertools.islice(changes(args.changelog), args.limit):
        seen += 1
        document_id = str(change["document_id"])
        if change["action"] == "upsert":
            pieces = [
                Document(page_content=p.page_content,
                         metadata={**p.metadata, "source": document_id,
                                   "version": change["version"]})
                for p in splitter.split_text(str(change["content"]))
            ]
            index(pieces, records, store, cleanup="incremental", source_id_key="source")
        else:
            keys = records.list_keys(group_ids=[document_id])
            if keys:
                store.delete(keys)
                records.delete_keys(keys)
    documents = {str(v["metadata"]["source"]) for v in store.store.values()}
    print(f"{seen} changes, {len(documents)} documents, {len(store.store)} pieces")


if __name__ == "__main__":
    main()
