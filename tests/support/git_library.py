"""A real Git history of a policy library, built from a corpus change log, and pushes of it.

``CorpusHistory`` writes one commit per change of the log (an upsert writes
the file at its path, a delete removes it), committed at the change's time,
with ``git fast-import`` into an "author" repository, and pushes ranges of
those commits to a bare "upstream" repository (the GitHub of the tests) with
``git push``. ``github_push`` turns a real GitHub push payload (from
``@octokit/webhooks-examples``) into the one GitHub would send for a push.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from events.model import Action, ChangeEvent, EventMetadata

REPO_ROOT = Path(__file__).resolve().parents[2]
CORPORA = REPO_ROOT.parent / "shared" / "corpora"
BASECAMP = CORPORA / "basecamp-policies.jsonl"
EXAMPLES = (REPO_ROOT / ".local" / "node" / "node_modules" / "@octokit" / "webhooks-examples"
            / "api.github.com" / "index.json")
_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}


def git(repo: Path, *args: str, input_bytes: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=input_bytes,
                          capture_output=True, check=False, env=_ENV, timeout=120)
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr.decode()[-800:]}")
    return done.stdout.decode()


def corpus_records(path: Path = BASECAMP) -> list[dict[str, Any]]:
    if not path.exists():
        pytest.skip(f"the corpus {path} is absent (../shared/corpora is not beside the repo)")
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def corpus_events(records: Sequence[dict[str, Any]]) -> list[ChangeEvent]:
    """The log as change events, as the Git source makes them (source_path = the file)."""
    events = []
    for r in records:
        upsert = r["action"] == "upsert"
        events.append(ChangeEvent(
            event_id=f"corpus-{r['seq']}", document_id=r["document_id"],
            action=Action.UPSERT if upsert else Action.DELETE, version=r["version"],
            changed_at=datetime.fromisoformat(r["changed_at"].replace("Z", "+00:00")),
            content_type="text/markdown" if upsert else None,
            content=r["content"] if upsert else None,
            metadata=EventMetadata(source_path=r["path"]) if upsert else EventMetadata(),
        ))
    return events


def octokit_push_example() -> dict[str, Any]:
    """A real GitHub push payload to a branch, from ``@octokit/webhooks-examples``."""
    if not EXAMPLES.exists():
        raise AssertionError(f"{EXAMPLES} is missing: run scripts/install (it installs the npm "
                             "package @octokit/webhooks-examples into .local/node)")
    for webhook in json.loads(EXAMPLES.read_text("utf-8")):
        if webhook["name"] == "push":
            for example in webhook["examples"]:
                if example["ref"].startswith("refs/heads/") and example["commits"]:
                    result: dict[str, Any] = example
                    return result
    raise AssertionError(f"{EXAMPLES} holds no branch push example")


@dataclass
class Commit:
    sha: str
    record: dict[str, Any]


class CorpusHistory:
    """The author's repository (every commit of the log) and the upstream the receiver fetches."""

    def __init__(self, root: Path, records: Sequence[dict[str, Any]], branch: str = "main"):
        self.branch = branch
        self.author = root / "author.git"
        self.upstream = root / "upstream.git"
        for repo in (self.author, self.upstream):
            repo.mkdir(parents=True)
            git(repo, "init", "--quiet", "--bare", "--initial-branch", branch)
        self.commits = self._import(records, f"refs/heads/{branch}")

    def _import(self, records: Sequence[dict[str, Any]], ref: str,
                parent: str | None = None, marker: str = "") -> list[Commit]:
        stream = bytearray()
        for mark, r in enumerate(records, start=1):
            at = int(datetime.fromisoformat(r["changed_at"].replace("Z", "+00:00")).timestamp())
            message = f"{r['action']} {r['path']} (seq {r['seq']}){marker}".encode()
            stream += f"commit {ref}\nmark :{mark}\n".encode()
            stream += f"committer Policy Team <policies@example.com> {at} +0000\n".encode()
            stream += b"data %d\n%s\n" % (len(message), message)
            if mark == 1 and parent is not None:
                stream += f"from {parent}\n".encode()
            if r["action"] == "upsert":
                content = r["content"].encode("utf-8")
                stream += f"M 100644 inline {r['path']}\ndata {len(content)}\n".encode()
                stream += content + b"\n"
            else:
                stream += f"D {r['path']}\n".encode()
            stream += b"\n"
        marks = self.author / "marks"
        git(self.author, "fast-import", "--quiet", "--force", f"--export-marks={marks}",
            input_bytes=bytes(stream))
        by_mark = dict(line.split() for line in marks.read_text().splitlines())
        return [Commit(by_mark[f":{i}"], r) for i, r in enumerate(records, start=1)]

    def rewrite(self, keep: int, records: Sequence[dict[str, Any]], marker: str) -> list[Commit]:
        """Commits on top of the ``keep``-th one (a rewrite of what came after), on a side ref."""
        parent = self.commits[keep - 1].sha
        return self._import(records, "refs/heads/rewritten", parent=parent, marker=marker)

    def push(self, sha: str, *, force: bool = False) -> tuple[str, str]:
        """``git push`` ``sha`` to the upstream branch; returns (before, after)."""
        ref = f"refs/heads/{self.branch}"
        before = git(self.upstream, "rev-parse", "--verify", "--quiet", ref).strip() \
            if self._has(ref) else "0" * 40
        git(self.author, "push", "--quiet", *(["--force"] if force else []), str(self.upstream),
            f"{sha}:{ref}")
        return before, sha

    def _has(self, ref: str) -> bool:
        return subprocess.run(["git", "-C", str(self.upstream), "rev-parse", "--verify",
                               "--quiet", ref], capture_output=True, check=False,
                              env=_ENV).returncode == 0


def github_push(example: dict[str, Any], *, repository: str, branch: str, before: str,
                after: str, commits: Sequence[Commit], forced: bool = False) -> bytes:
    """The real example payload, made the push of ``commits`` to ``repository``'s ``branch``."""
    payload = copy.deepcopy(example)
    owner, _, name = repository.partition("/")
    payload.update(ref=f"refs/heads/{branch}", before=before, after=after, created=False,
                   deleted=False, forced=forced)
    payload["repository"].update(full_name=repository, name=name)
    payload["repository"]["owner"].update(login=owner, name=owner)
    template = example["commits"][0]
    payload["commits"] = []
    for commit in commits[-20:]:  # GitHub lists at most 20 commits; the receiver reads none
        entry = copy.deepcopy(template)
        path, upsert = commit.record["path"], commit.record["action"] == "upsert"
        entry.update(id=commit.sha, tree_id=commit.sha, timestamp=commit.record["changed_at"],
                     added=[path] if upsert else [], removed=[] if upsert else [path],
                     modified=[], message=f"{commit.record['action']} {path}")
        payload["commits"].append(entry)
    payload["head_commit"] = payload["commits"][-1] if payload["commits"] else None
    return json.dumps(payload).encode("utf-8")
