"""Turn a policy library's Git history into a change log (the format of ../shared/corpora).

    .venv/bin/python eval/make_changelog.py --git-dir PATH --out eval/legalmattic.jsonl.gz
        [--rev HEAD] [--skip PREFIX] [--all-languages]

PATH is a Git directory (a bare mirror such as /work/.mirror/Automattic+legalmattic/repo
works; so does a checkout's .git). The output is gzip'd JSON Lines when --out ends in
``.gz``, plain JSON Lines otherwise, one change per line, in the format documented in
../shared/corpora/README.md:

    {"seq", "document_id", "path", "action": "upsert"|"delete", "version",
     "changed_at" (UTC, ...Z), "commit" (12 hex), "content" (upserts only)}

How the history is read:

- The first-parent history of --rev, oldest first: a pull request's changes count as
  made when its merge landed on the main line (that is when the published documents
  changed), and side branches that never reached it are not in the stream. Each main
  line commit is compared with its first parent (rename detection off), and its
  committer date is ``changed_at``.
- Only Markdown policy documents: files ending in ``.md``, except README/readme files,
  licence files, CONTRIBUTING/SECURITY/CODE_OF_CONDUCT files, anything under ``.github/``
  and the ``Offer Letters/`` folder (Automattic's employment offer-letter templates,
  not policies). ``--skip`` adds more path prefixes.
- English only, unless ``--all-languages``: a file whose name starts with a language
  code other than ``EN-`` (``DE-Geschäftsbedingungen.md``, ``PT-BR-Termos-de-Serviço.md``:
  the WordPress.com terms in 14 languages, 115 changes from 2014-11 to 2019-05, all
  gone from the library today) is skipped: the question set is English, and they add a
  third to the file (1.9 MB gzip'd without them, 2.6 MB with).
- ``document_id`` is the path without ``.md`` and without a trailing ``/index``.
  ``content`` is the whole file after the change (front matter included), decoded as
  UTF-8 (a byte-order mark is dropped; a file that is not UTF-8 stops the run).
- Within one commit, deletes come before upserts, each in path order, so a rename is a
  delete of the old id followed by an upsert of the new one. ``version`` counts the
  changes of a document id from 1 and keeps counting after a delete.

Only the Python standard library and the ``git`` command are needed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

SKIP_NAMES = {
    "readme",
    "license",
    "licence",
    "contributing",
    "security",
    "code_of_conduct",
    "changelog",
}
SKIP_PREFIXES = (".github/", "Offer Letters/")
TRANSLATION = re.compile(r"(?!EN-)[A-Z]{2}(?:-[A-Z]{2})?-")


def git(git_dir: str, *args: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True
    ).stdout


def is_policy(path: str, extra_skips: tuple[str, ...], all_languages: bool = False) -> bool:
    p = PurePosixPath(path)
    if p.suffix.lower() != ".md":
        return False
    if not all_languages and TRANSLATION.match(p.name):
        return False
    if p.stem.lower() in SKIP_NAMES:
        return False
    return not path.startswith(SKIP_PREFIXES + extra_skips)


def document_id(path: str) -> str:
    doc = path[: -len(".md")]
    if doc.endswith("/index"):
        doc = doc[: -len("/index")]
    return doc


def mainline(git_dir: str, rev: str) -> list[tuple[str, str, str]]:
    """(commit, first parent or '', committer time as UTC ...Z), oldest first."""
    out = git(git_dir, "log", "--first-parent", "--reverse", "--format=%H %P%x00%ct", rev)
    commits = []
    for line in out.decode().splitlines():
        hashes, stamp = line.split("\x00")
        commit, *parents = hashes.split()
        when = datetime.fromtimestamp(int(stamp), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        commits.append((commit, parents[0] if parents else "", when))
    return commits


def changed_paths(git_dir: str, commit: str, parent: str) -> list[tuple[str, str]]:
    """(status letter, path) of every file the commit changed against its first parent."""
    if parent:
        out = git(git_dir, "diff-tree", "-r", "-z", "--no-renames", "--name-status", parent, commit)
    else:
        out = git(
            git_dir, "diff-tree", "-r", "-z", "--no-renames", "--name-status", "--root", commit
        )
    fields = out.decode("utf-8").split("\x00")
    if fields and fields[-1] == "":
        fields.pop()
    if not parent and fields and len(fields) % 2 == 1:
        fields.pop(0)  # --root prints the commit first
    return [(fields[i][0], fields[i + 1]) for i in range(0, len(fields), 2)]


def read_blob(git_dir: str, commit: str, path: str) -> str:
    data = git(git_dir, "cat-file", "blob", f"{commit}:{path}")
    text = data.decode("utf-8")
    return text.removeprefix("\ufeff")


def changes(
    git_dir: str, rev: str, extra_skips: tuple[str, ...], all_languages: bool
) -> Iterator[dict[str, Any]]:
    versions: Counter[str] = Counter()
    seq = 0
    for commit, parent, when in mainline(git_dir, rev):
        touched = [
            (s, p)
            for s, p in changed_paths(git_dir, commit, parent)
            if is_policy(p, extra_skips, all_languages)
        ]
        deletes = sorted(p for s, p in touched if s == "D")
        upserts = sorted(p for s, p in touched if s != "D")
        for action, paths in (("delete", deletes), ("upsert", upserts)):
            for path in paths:
                doc = document_id(path)
                versions[doc] += 1
                seq += 1
                event = {
                    "seq": seq,
                    "document_id": doc,
                    "path": path,
                    "action": action,
                    "version": versions[doc],
                    "changed_at": when,
                    "commit": commit[:12],
                }
                if action == "upsert":
                    event["content"] = read_blob(git_dir, commit, path)
                yield event


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--git-dir", required=True, help="the library's Git directory")
    ap.add_argument("--out", required=True, help="output file (.jsonl or .jsonl.gz)")
    ap.add_argument("--rev", default="HEAD", help="the commit whose history is read")
    ap.add_argument("--skip", action="append", default=[], help="another path prefix to skip")
    ap.add_argument(
        "--all-languages",
        action="store_true",
        help="keep the translations (files named XX-... other than EN-...)",
    )
    args = ap.parse_args(argv)

    final: dict[str, bool] = {}
    counts: Counter[str] = Counter()
    # No name and mtime 0 in the gzip header: the same history gives the same bytes.
    with open(args.out, "wb") as raw:
        gz = (
            gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0)
            if args.out.endswith(".gz")
            else None
        )
        sink = gz if gz is not None else raw
        for event in changes(args.git_dir, args.rev, tuple(args.skip), args.all_languages):
            sink.write((json.dumps(event, ensure_ascii=False) + "\n").encode("utf-8"))
            counts[event["action"]] += 1
            final[event["document_id"]] = event["action"] == "upsert"
        if gz is not None:
            gz.close()
    head = git(args.git_dir, "rev-parse", args.rev).decode().strip()
    print(
        f"{args.out}: {sum(counts.values())} changes ({counts['upsert']} upserts, "
        f"{counts['delete']} deletes), {len(final)} document ids, "
        f"{sum(final.values())} documents at the end; {args.rev} = {head}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
