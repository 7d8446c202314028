"""One digest of every chunk of every version of both corpora: the check that a
chunker change meant to be faster (or leaner) gives the same chunks.

    .venv/bin/python bench/chunk_digest.py [--corpora DIR]

Run it before and after the change and compare the two lines. Each chunk is
hashed as its ``model_dump(mode="json")`` with sorted keys, so a change in the
JSON's key order alone does not count; every upsert of both change logs is
chunked with the default size policy, in log order. About 11 s here.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
from pathlib import Path

from chunker import chunk_document

ROOT = Path(__file__).resolve().parents[1]
FILES = ("basecamp-policies.jsonl", "mozilla-legal-docs.jsonl.gz")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    corpora = parser.parse_args().corpora
    digest = hashlib.sha256()
    versions = chunks = 0
    for name in FILES:
        opener = gzip.open if name.endswith(".gz") else open
        with opener(corpora / name, "rt", encoding="utf-8") as lines:
            for line in lines:
                event = json.loads(line)
                if event["action"] != "upsert":
                    continue
                versions += 1
                document = (event["document_id"], event["version"], event["content"])
                for chunk in chunk_document(*document):
                    dumped = json.dumps(chunk.model_dump(mode="json"), sort_keys=True)
                    digest.update(dumped.encode())
                    chunks += 1
    print(f"{versions} versions, {chunks} chunks, sha256 {digest.hexdigest()}")


if __name__ == "__main__":
    main()
