"""A Git repository as the source: a local mirror kept by ``git fetch``, and its changes as events.

Many policy libraries are "docs as code": Markdown in a Git repository,
published by a push. ``GitSource`` keeps a bare mirror of one branch of the
remote (``git fetch``, through the ``git`` command) and says, like every
source, what exists at the branch head (``list_documents`` / ``get_document``:
the freshness monitor and the nightly reconcile use it). ``pending_changes``
turns what the branch gained since the last published head into change events,
and ``publish_pending`` (what a push webhook and the poller call) fetches,
publishes them and only then moves the published head.

The rules, those of the corpora this project ships:

- a document is a ``.md`` / ``.html`` file (below ``path_prefix``); its id is
  the folder source's (``refund/index.md`` -> ``refund``);
- its version is the number of commits that touched a path of that id, up to
  the head (``git log`` without merge diffs), so a delete counts and a
  document that comes back has a higher version; its change time is the time
  of the last such commit;
- a rename is a delete of the old id and an upsert of the new one
  (``--no-renames``);
- only regular files are documents. A symbolic link in the tree (Git keeps its
  link text, which would be indexed as the document) or a submodule is listed
  ``unreadable`` (``not_regular``) and never published; a path whose name is not
  UTF-8 is listed ``unreadable`` (``name``) under its escaped form, as in the
  folder source; such a path is never deleted from the index either (the
  document is kept as it was, like the folder's unreadable files);
- a document whose front matter has no ``access_labels`` key gets the labels of
  ``default_access_labels`` for its path below the prefix
  (``sources.label_defaults``).

A force-push can shrink the count of commits of a document; the index never
goes back in time, so its version would no longer grow. When the published
head is not an ancestor of the new head, every document whose version would
not stay (same content) or grow (changed content) gets a per-document offset,
kept in the mirror (``policy-indexer-versions.json``) and added to its count
from then on, by the events and the listing alike.

The published head is the ref ``refs/policy-indexer/published`` of the mirror
(so its commits stay reachable after a force-push). A mirror serves one
process that publishes (a file lock makes two wait for each other); any
number may list.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import structlog

from events.model import Action, ChangeEvent, EventMetadata
from sources.base import (
    SourceDocument,
    SourceEntry,
    Unreadable,
    UnreadableKind,
    document_id_problem,
)
from sources.errors import DocumentNotFoundError, SourceDataError, SourceUnavailableError
from sources.folder import (
    content_type_for,
    document_id_for,
    front_matter_of,
    is_document_name,
    is_utf8_name,
    shown_name,
)
from sources.hidden import hidden_component, parse_hidden_allow
from sources.label_defaults import (
    NO_DEFAULTS,
    RawDefaults,
    declares_access_labels,
    parse_label_defaults,
    with_default_labels,
)
from transport.publisher import EventPublisher, PublishError

log = structlog.get_logger(__name__)

PUBLISHED_REF = "refs/policy-indexer/published"
VERSIONS_FILE = "policy-indexer-versions.json"
_LOCK_FILE = "policy-indexer.lock"
_ZERO_SHA = "0" * 40
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
_REGULAR_MODES = frozenset({b"100644", b"100755", b"100664"})
_NOT_REGULAR = {b"120000": "a symbolic link (Git keeps its link text, not a file)",
                b"160000": "a submodule (a commit of another repository)"}


@dataclass(frozen=True, slots=True)
class _Tree:
    """The documents at one revision: id -> path, and the refused ones: id -> reason."""

    paths: dict[str, str]
    refused: dict[str, Unreadable]


@dataclass(frozen=True, slots=True)
class _History:
    """Per document id at one revision: commits that touched it, the last one's time."""

    counts: Counter[str]
    last_touch: dict[str, datetime]


@dataclass(frozen=True)
class PendingChanges:
    """What the branch gained since ``since`` (None: nothing published yet) up to ``head``."""

    since: str | None
    head: str
    events: list[ChangeEvent] = field(default_factory=list)
    forced: bool = False


class GitSource:
    """One branch of one Git remote, mirrored under ``mirror_path``."""

    def __init__(
        self,
        remote_url: str,
        mirror_path: str | Path,
        *,
        branch: str = "main",
        path_prefix: str = "",
        timeout_seconds: float = 60.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        hidden_allow: str | Collection[str] = (),
        default_access_labels: RawDefaults = NO_DEFAULTS,
    ) -> None:
        if not branch or branch.startswith("-") or ".." in branch:
            raise ValueError(f"git branch {branch!r} is not a branch name")
        self.remote_url = remote_url
        self.mirror = Path(mirror_path)
        self.branch = branch
        self.prefix = path_prefix.strip("/") + "/" if path_prefix.strip("/") else ""
        self._timeout = timeout_seconds
        self._clock = clock
        self._tracking = f"refs/remotes/origin/{branch}"
        self._history: dict[str, _History] = {}
        self._offsets: dict[str, int] = {}
        self._offsets_stamp: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self.hidden_allow = parse_hidden_allow(hidden_allow)  # as the folder source
        self.default_access_labels = parse_label_defaults(default_access_labels)

    @property
    def name(self) -> str:
        return "git"

    # -- the mirror ----------------------------------------------------------
    def _git(self, *args: str, check: bool = True, timeout: float | None = None) -> bytes:
        try:
            done = subprocess.run(
                ["git", "-C", str(self.mirror), *args], capture_output=True, check=False,
                timeout=timeout or self._timeout, env={**os.environ, **_ENV},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SourceUnavailableError(f"git {args[0]} in {self.mirror}: {exc}") from exc
        if check and done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip()[-500:]
            raise SourceUnavailableError(f"git {args[0]} in {self.mirror} failed: {message}")
        return done.stdout

    def _ensure_mirror(self) -> None:
        if (self.mirror / "HEAD").exists():
            return
        self.mirror.mkdir(parents=True, exist_ok=True)
        self._git("init", "--quiet", "--bare")
        self._git("config", "remote.origin.url", self.remote_url)

    def fetch(self) -> str:
        """Bring the branch from the remote into the mirror; return its head commit."""
        self._ensure_mirror()
        self._git("config", "remote.origin.url", self.remote_url)
        self._git("fetch", "--quiet", "--no-tags", "--force", "origin",
                  f"+refs/heads/{self.branch}:{self._tracking}")
        head = self.head()
        if head is None:
            raise SourceUnavailableError(f"branch {self.branch!r} not found at {self.remote_url}")
        return head

    def head(self) -> str | None:
        """The mirror's branch head, or None before the first fetch."""
        if not (self.mirror / "HEAD").exists():
            return None
        out = self._git("rev-parse", "--verify", "--quiet", f"{self._tracking}^{{commit}}",
                        check=False)
        return out.decode().strip() or None

    def has_commit(self, sha: str) -> bool:
        if not (self.mirror / "HEAD").exists() or not _is_sha(sha):
            return False
        out = self._git("cat-file", "-t", sha, check=False)
        return out.strip() == b"commit"

    def published_head(self) -> str | None:
        if not (self.mirror / "HEAD").exists():
            return None
        out = self._git("rev-parse", "--verify", "--quiet", PUBLISHED_REF, check=False)
        return out.decode().strip() or None

    def mark_published(self, head: str) -> None:
        self._git("update-ref", PUBLISHED_REF, head)

    # -- history and versions --------------------------------------------------
    def _document_id(self, path: str) -> str | None:
        """None for a path outside the prefix, not a document name, or through a hidden
        name (``.github/x.md``, ``docs/.drafts/y.md``), as in the folder source."""
        if not path.startswith(self.prefix):
            return None
        parts = path[len(self.prefix):].split("/")
        if not is_document_name(parts[-1], self.hidden_allow) or hidden_component(
                parts[:-1], self.hidden_allow) is not None:
            return None
        return document_id_for(path[len(self.prefix):])

    def _walk(self, revision: str) -> _History:
        cached = self._history.get(revision)
        if cached is not None:
            return cached
        raw = self._git("log", "--no-renames", "--name-status", "-z", "--format=%x1e%H %ct",
                        revision, "--")
        counts: Counter[str] = Counter()
        last: dict[str, datetime] = {}
        for record in raw.split(b"\x1e")[1:]:
            header, _, rest = record.partition(b"\0")
            at = datetime.fromtimestamp(int(header.split()[1]), UTC)
            tokens = rest.lstrip(b"\n").split(b"\0")
            ids = {self._document_id(p.decode("utf-8", "surrogateescape"))
                   for p in tokens[1::2] if p}
            for document_id in ids:
                if document_id is None:
                    continue
                counts[document_id] += 1
                if document_id not in last or at > last[document_id]:
                    last[document_id] = at
        history = _History(counts, last)
        self._history = {revision: history, **dict(list(self._history.items())[:3])}
        return history

    def _load_offsets(self) -> dict[str, int]:
        path = self.mirror / VERSIONS_FILE
        try:
            st = path.stat()
        except FileNotFoundError:
            self._offsets, self._offsets_stamp = {}, None
            return self._offsets
        stamp = (st.st_size, st.st_mtime_ns)
        if stamp != self._offsets_stamp:
            try:
                data = json.loads(path.read_text("utf-8"))
            except (OSError, ValueError) as exc:
                raise SourceDataError(f"{path}: not a JSON object of offsets: {exc}") from exc
            if not isinstance(data, dict) or not all(
                isinstance(v, int) and v >= 0 for v in data.values()
            ):
                raise SourceDataError(f"{path}: expected {{document_id: offset >= 0}}")
            self._offsets, self._offsets_stamp = {str(k): v for k, v in data.items()}, stamp
        return self._offsets

    def _save_offsets(self, offsets: dict[str, int]) -> None:
        path = self.mirror / VERSIONS_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(offsets, sort_keys=True, indent=0), "utf-8")
        os.replace(tmp, path)
        self._offsets_stamp = None

    def _versions(self, revision: str) -> tuple[dict[str, int], dict[str, datetime]]:
        history = self._walk(revision)
        offsets = self._load_offsets()
        return ({d: n + offsets.get(d, 0) for d, n in history.counts.items()},
                history.last_touch)

    def _documents_at(self, revision: str) -> dict[str, str]:
        """Document id -> its path at ``revision`` (the first path in order, if several)."""
        return self._tree(revision).paths

    def _tree(self, revision: str) -> _Tree:
        """The regular files that are documents at ``revision``, and the refused ones.

        A symbolic link or a submodule is refused (``not_regular``), a name that is not
        UTF-8 too (``name``, under its escaped id). The first path of an id in byte
        order wins, as before.
        """
        raw = self._git("ls-tree", "-r", "-z", revision, "--")
        items: list[tuple[bytes, bytes]] = []
        for item in raw.split(b"\0"):
            meta, tab, name = item.partition(b"\t")
            if tab:
                items.append((name, meta.split(b" ", 1)[0]))
        paths: dict[str, str] = {}
        refused: dict[str, Unreadable] = {}
        for name, mode in sorted(items):
            path = name.decode("utf-8", "surrogateescape")
            document_id = self._document_id(path)
            if document_id is None:
                continue
            if not is_utf8_name(path):
                shown = shown_name(path)
                shown_id = self._document_id(shown) or shown
                refused.setdefault(shown_id, Unreadable(
                    UnreadableKind.NAME, f"{shown} at {revision[:12]}: name not UTF-8 (shown "
                    "escaped): not read; rename the file"))
                continue
            if mode not in _REGULAR_MODES:
                kind = _NOT_REGULAR.get(mode, f"mode {mode.decode('ascii', 'replace')}")
                if document_id not in paths:
                    refused.setdefault(document_id, Unreadable(
                        UnreadableKind.NOT_REGULAR,
                        f"{path} at {revision[:12]}: not a regular file ({kind}): not read"))
                continue
            if document_id not in paths:
                paths[document_id] = path
                refused.pop(document_id, None)
        return _Tree(paths, refused)

    def _read(self, revision: str, path: str) -> str:
        raw = self._git("cat-file", "blob", f"{revision}:{path}")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SourceDataError(f"{path} at {revision[:12]} is not UTF-8: {exc}") from exc

    # -- the Source interface --------------------------------------------------
    def _head_or_fetch(self) -> str:
        head = self.head()
        return head if head is not None else self.fetch()

    def list_documents(self) -> Iterator[SourceEntry]:
        """Every document at the remote's branch head: fetched first, so a lost push shows as lag.

        The published head does not move: the changes are published by the
        next push or poll, and until then the monitor sees the index behind.
        """
        with self._lock, _FileLock(self.mirror / _LOCK_FILE):
            head = self.fetch()
        versions, last = self._versions(head)
        tree = self._tree(head)
        entries = [SourceEntry(d, versions[d], last[d]) if problem is None
                   else SourceEntry(d, 0, last[d], unreadable=problem)
                   for d in tree.paths
                   if d in versions for problem in [document_id_problem(d)]]
        at = self._clock()
        for document_id, reason in tree.refused.items():
            log.warning("document file unreadable", document_id=document_id,
                        reason=reason.kind.value, detail=reason.detail)
            entries.append(SourceEntry(document_id, 0, last.get(document_id, at),
                                       unreadable=reason))
        return iter(entries)

    def get_document(self, document_id: str) -> SourceDocument:
        """Raises ``DocumentNotFoundError``, or ``SourceDataError`` naming why a path the
        branch holds is no document (a symbolic link, a name not UTF-8)."""
        head = self._head_or_fetch()
        tree = self._tree(head)
        path = tree.paths.get(document_id)
        if path is None:
            if document_id in tree.refused:
                raise SourceDataError(str(tree.refused[document_id]))
            raise DocumentNotFoundError(document_id)
        versions, last = self._versions(head)
        content = self._read(head, path)
        return SourceDocument(
            document_id=document_id, version=versions[document_id],
            changed_at=last[document_id], content=content,
            content_type=content_type_for(path), metadata=self._metadata(path, content),
        )

    def _metadata(self, path: str, content: str) -> EventMetadata:
        """The event's metadata: the path, and the default labels when the front matter
        sets no ``access_labels`` (a front matter the loader refuses: none added, the
        chunker refuses the document anyway)."""
        metadata = EventMetadata(source_path=path)
        if not self.default_access_labels:
            return metadata
        try:
            front_matter = front_matter_of(content, path) if path.endswith(".md") else {}
        except SourceDataError:
            return metadata
        return with_default_labels(metadata, self.default_access_labels,
                                   path[len(self.prefix):],
                                   declares_access_labels(front_matter))

    def close(self) -> None:
        self._history = {}

    # -- changes -----------------------------------------------------------------
    def pending_changes(self, head: str) -> PendingChanges:
        """The events that take the index from the published head to ``head``.

        Nothing published yet: an upsert of every document at ``head`` (the
        version guard skips what the index already holds).
        """
        since = self.published_head()
        if since is not None and not self.has_commit(since):
            since = None
        tree = self._tree(head)
        at_head = tree.paths
        if since is None:
            upserts = [self._upsert(head, d, p) for d, p in at_head.items()
                       if self._publishable(d)]
            return PendingChanges(None, head, upserts)
        if since == head:
            return PendingChanges(since, head)
        changed = self._changed_ids(since, head)
        forced = not self._is_ancestor(since, head)
        if forced:
            self._keep_versions_growing(since, head, changed)
        for document_id in sorted(changed & set(tree.refused)):
            reason = tree.refused[document_id]
            log.warning("file skipped: not a readable document", document_id=document_id,
                        reason=reason.kind.value, detail=reason.detail)
        events = [self._upsert(head, d, at_head[d]) if d in at_head else self._delete(head, d)
                  for d in sorted(changed - set(tree.refused)) if self._publishable(d)]
        return PendingChanges(since, head, events, forced)

    def _publishable(self, document_id: str) -> bool:
        """False (logged) for an id the change event refuses: listed unreadable, never sent."""
        if not is_utf8_name(document_id):  # a name not UTF-8 (escaped in the listing)
            log.warning("file skipped: not a readable document", document_id=shown_name(
                document_id), reason=UnreadableKind.NAME.value, detail="name not UTF-8")
            return False
        problem = document_id_problem(document_id)
        if problem is not None:
            log.warning("file skipped: not a readable document", document_id=document_id,
                        reason=problem.kind.value, detail=problem.detail)
        return problem is None

    def _changed_ids(self, old: str, new: str) -> set[str]:
        raw = self._git("diff", "--no-renames", "--name-only", "-z", old, new, "--")
        ids = {self._document_id(p.decode("utf-8", "surrogateescape"))
               for p in raw.split(b"\0") if p}
        return {d for d in ids if d is not None}

    def _is_ancestor(self, old: str, new: str) -> bool:
        out = subprocess.run(
            ["git", "-C", str(self.mirror), "merge-base", "--is-ancestor", old, new],
            capture_output=True, check=False, timeout=self._timeout, env={**os.environ, **_ENV},
        )
        return out.returncode == 0

    def _keep_versions_growing(self, old: str, new: str, changed: set[str]) -> None:
        """After a force-push: offsets so no version shrinks, and a changed one grows."""
        before, _ = self._versions(old)
        after, _ = self._versions(new)
        offsets = dict(self._load_offsets())
        for document_id, old_version in before.items():
            wanted = old_version + (1 if document_id in changed else 0)
            have = after.get(document_id, 0)
            if have < wanted:
                offsets[document_id] = offsets.get(document_id, 0) + wanted - have
        if offsets != self._load_offsets():
            self._save_offsets(offsets)
            log.info("git force-push: versions kept growing", old=old[:12], new=new[:12],
                     documents=sorted(d for d in offsets if offsets[d] != self._offsets.get(d)))

    def _upsert(self, head: str, document_id: str, path: str) -> ChangeEvent:
        versions, last = self._versions(head)
        now = self._clock()
        content = self._read(head, path)
        return ChangeEvent(
            event_id=f"git-{head[:12]}-{uuid.uuid4().hex[:12]}", document_id=document_id,
            action=Action.UPSERT, version=versions[document_id],
            changed_at=last[document_id], received_at=now,
            content_type=content_type_for(path), content=content,
            metadata=self._metadata(path, content), source=self.name,
        )

    def _delete(self, head: str, document_id: str) -> ChangeEvent:
        versions, last = self._versions(head)
        if document_id not in versions:  # force-pushed away; offsets made it grow
            versions = {document_id: self._load_offsets().get(document_id, 1)}
            last = {document_id: self._clock()}
        return ChangeEvent(
            event_id=f"git-{head[:12]}-{uuid.uuid4().hex[:12]}", document_id=document_id,
            action=Action.DELETE, version=versions[document_id],
            changed_at=last[document_id], received_at=self._clock(), source=self.name,
        )

    def publish_pending(self, publisher: EventPublisher,
                        wanted: str | None = None) -> PendingChanges:
        """Fetch, publish what the branch gained, then record the head as published.

        ``wanted`` (a push's ``after``) must be in the mirror after the fetch,
        else ``SourceUnavailableError`` (the caller retries later); the events
        go up to the fetched head, which may be newer. A publish that fails
        raises ``PublishError`` and leaves the published head where it was, so
        the next call sends the same range again (the version guard makes the
        repeat harmless).
        """
        with self._lock, _FileLock(self.mirror / _LOCK_FILE):
            head = self.fetch()
            if wanted is not None and wanted != _ZERO_SHA and not self.has_commit(wanted):
                raise SourceUnavailableError(
                    f"commit {wanted[:12]} is not in the mirror after git fetch of {self.branch!r}"
                )
            pending = self.pending_changes(head)
            for event in pending.events:
                publisher.publish(event)
            if pending.since != head:
                self.mark_published(head)
                log.info("git changes published", since=(pending.since or "")[:12],
                         head=head[:12], events=len(pending.events), forced=pending.forced)
            return pending


class _FileLock:
    """An exclusive ``flock`` on a file of the mirror, for one publishing process at a time."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd: int | None = None

    def __enter__(self) -> _FileLock:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self._path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *_: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _is_sha(value: str) -> bool:
    return len(value) == 40 and all(c in "0123456789abcdef" for c in value)


class GitPoller:
    """The polling mode: ``publish_pending`` every ``interval_seconds``, no webhook needed.

    ``run`` returns when ``request_stop`` is called; a failed round (remote
    down, queue down) is logged and retried at the next one, since the
    published head moves only after a whole range is published.
    """

    def __init__(self, source: GitSource, publisher: EventPublisher,
                 interval_seconds: float) -> None:
        if interval_seconds <= 0:
            raise ValueError(f"git poll interval_seconds={interval_seconds} must be positive")
        self._source = source
        self._publisher = publisher
        self._interval = interval_seconds
        self._stop = threading.Event()
        self.rounds = 0
        self.last_error: Exception | None = None

    def run(self) -> None:
        while not self._stop.is_set():
            self.poll_once()
            self._stop.wait(self._interval)

    def poll_once(self) -> PendingChanges | None:
        try:
            pending = self._source.publish_pending(self._publisher)
        except (SourceUnavailableError, SourceDataError, PublishError) as exc:
            self.last_error = exc
            log.warning("git poll failed; retrying at the next round", error=str(exc))
            return None
        self.last_error = None
        self.rounds += 1
        return pending

    def request_stop(self) -> None:
        self._stop.set()
