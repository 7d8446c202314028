"""One pass of the folder watcher: compare the folder with what was published, publish the rest.

``FolderSync.sync()`` lists the folder (``MarkdownFolderSource.files``) and, for
each document id:

- a file whose id was never published, was deleted, or whose content or
  version changed -> an upsert;
- an id the watcher published as live whose file is gone -> a delete. A rename
  is therefore a delete of the old id and an upsert of the new one (upserts are
  sent first, so the text is never missing from the index).

Versions follow the folder source's rule (front matter ``version``, else the
modification time in seconds) so that the monitor and the nightly reindex,
which list the same folder, see the same numbers; but a version is never at
or below one already published or indexed for that id: then it is that one
plus one (two edits in one second, a delete then a re-creation, a file whose
modification time went back). The index may then be a little ahead of the
folder listing, which the monitor reads as current and the reindex leaves
alone.

At start-up the index is compared too: what this watcher published but the
index does not hold (a deleted and rebuilt index file, a lost queue, or an event
still waiting in the queue after a kill) is sent again. When the file's content
is the one published, it goes at the version it was published with (not a new
one): a copy still queued is then a redelivery the version guard skips, and the
index ends at the file's version however often the process is killed. A new
version only when the content changed or the index holds that version or a
newer one (a tombstone of the reconcile).

Deletes are sent only for ids this watcher published (its state file), never
for every indexed id missing from the folder: the index may hold documents
from other producers (a replayed change log, the webhook). The nightly
reconcile removes what is gone from the source for good.

A pass that finds the folder empty while more than one document was
published live deletes nothing (an unmounted share looks the same) and logs
an error.

A file that cannot be read as a document (no read permission, not UTF-8,
binary, bad front matter, a symbolic link loop or one leaving the root, a FIFO
or other non-regular file, too large, an id the change event refuses; see
``sources.folder``) is logged once and skipped: nothing is published, its
indexed version stays, and it still counts as present (an unreadable file is
never taken for a deleted one). Non-regular files are never opened.

A sub-folder that cannot be listed (no read or search permission) is reported
(``SyncReport.unlisted``, logged once) and what this watcher published under it
is kept: no delete is sent for it until the folder can be listed again; the
rest of the folder is compared as usual. Only an unlistable root fails the pass.

A publish that fails stops the pass; the next pass (the watcher retries)
sends it again: the queue is at-least-once and the version guard makes a
repeat harmless.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import pydantic
import structlog

from events.model import Action, ChangeEvent
from sources.base import UnreadableKind
from sources.errors import DocumentNotFoundError, SourceDataError, SourceError
from sources.folder import (
    DEFAULT_MAX_FILE_BYTES,
    FolderFile,
    MarkdownFolderSource,
    UnreadableFileError,
    document_id_for,
    shown_name,
)
from sources.label_defaults import NO_DEFAULTS, LabelDefaults
from sources.unlisted import covering
from store.errors import StoreError
from store.model import DocumentState
from transport.publisher import EventPublisher, PublishError
from watcher.watch_state import Published, WatchState

log = structlog.get_logger(__name__)


class IndexStates(Protocol):
    """The part of ``store.base.Store`` the watcher reads."""

    def get_state(self, document_id: str) -> DocumentState | None: ...

    def iter_states(self) -> Iterator[DocumentState]: ...


@dataclass(slots=True)
class SyncReport:
    upserts: int = 0
    deletes: int = 0
    skipped_files: int = 0
    publish_failed: bool = False
    unlisted: list[str] = field(default_factory=list)  # sub-folders that cannot be listed


@dataclass
class FolderSync:
    root: Path
    publisher: EventPublisher
    state: WatchState
    index: IndexStates | None = None
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    hidden_allow: Collection[str] = ()
    allow_hard_links: bool = False
    default_access_labels: LabelDefaults = NO_DEFAULTS
    _known: dict[str, Published] | None = field(default=None, init=False)
    _indexed_at_start: dict[str, DocumentState] = field(default_factory=dict, init=False)
    _bad: dict[str, tuple[int, int]] = field(default_factory=dict, init=False)
    _caught_up: bool = field(default=False, init=False)  # a start-up pass completed
    _resent: set[str] = field(default_factory=set, init=False)
    # At start-up: what was published but is not in the index, to send again as it was.
    _lacking: dict[str, Published] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.source = MarkdownFolderSource(self.root, max_file_bytes=self.max_file_bytes,
                                           hidden_allow=self.hidden_allow,
                                           allow_hard_links=self.allow_hard_links,
                                           default_access_labels=self.default_access_labels)

    def sync(self, touched: Collection[str] = ()) -> SyncReport:
        """Publish every difference between the folder and what was published.

        A file whose size and modification time are those last published is not
        read again, unless it is in ``touched`` (paths relative to the root that
        the file system reported) or the start-up pass has not yet completed (an
        edit made while stopped may have kept both).
        Raises ``SourceUnavailableError`` when the folder cannot be listed and
        ``StoreError`` when the index cannot be read; nothing is lost, the next
        pass starts over.
        """
        if self._known is None:
            known = self.state.load()
            if self.index is not None:
                self._indexed_at_start = {s.document_id: s for s in self.index.iter_states()}
            self._known = known
        known, report, catching_up = self._known, SyncReport(), not self._caught_up
        files = self._scan()
        report.unlisted = sorted(
            f.relative for f in files.values()
            if f.unreadable is not None and f.unreadable.kind is UnreadableKind.UNLISTABLE
        )
        for document_id, file in files.items():
            published = known.get(document_id) or self._indexed(document_id)
            if catching_up and published is not None and self._index_lacks(published):
                self._lacking[document_id] = published
                published = None  # published once but not in the index: send again
            reread = catching_up or file.relative in touched
            try:
                done = self._upsert_if_changed(document_id, file, published, report,
                                               reread=reread)
            except (SourceError, StoreError):
                raise  # the folder, the state file or the index: the pass fails, retried
            except Exception as exc:  # a bug on one file must not stop every other one
                log.exception("unexpected error on one file; it is skipped",
                              path=shown_name(str(file.path)))
                done = self._skip(file, f"unexpected error: {type(exc).__name__}", report)
            if not done:
                return report
        gone = [
            document_id for document_id, published in sorted(known.items())
            if document_id not in files
            and (not published.deleted or (catching_up and self._index_lacks(published)))
            and covering(document_id, report.unlisted) is None  # unknown: kept as it was
        ]
        if not files and len(gone) > 1:
            log.error("the folder lists no document: refusing to delete them all (an unmounted "
                      "or emptied folder?); the nightly reconcile decides",
                      folder=str(self.root), documents=len(gone))
            gone = []
        for document_id in gone:
            version = self._again_or_next(document_id, known[document_id], None, 0)
            if not self._publish(self._delete_event(document_id, version), report):
                return report
            self._record(Published(document_id, version, True))
            report.deletes += 1
        self._caught_up = True
        return report

    def restart(self) -> None:
        """Make the next pass a start-up pass again (the watcher restarted after a failure):
        every file is read, and the index compared, as after a process start."""
        self._known = None
        self._indexed_at_start = {}
        self._bad = {}
        self._caught_up = False
        self._resent = set()
        self._lacking = {}

    def _index_lacks(self, published: Published | None) -> bool:
        """At start-up: the index does not hold what this watcher last published.

        The index file was deleted and rebuilt, or the queue lost the event, or
        the event still waits in the queue (sending it again is then harmless).
        """
        if published is None or self.index is None or published.document_id in self._resent:
            return False
        indexed = self._indexed_at_start.get(published.document_id)
        if published.deleted:
            return indexed is not None and not indexed.deleted
        return indexed is None or indexed.deleted or indexed.version < published.version

    def _indexed(self, document_id: str) -> Published | None:
        """What the index held at start-up of an id this watcher never published.

        A document the index holds live at a version the folder's rule does not
        exceed counts as published (no event at start-up: the index was built
        from this folder before the state file existed); its content hash is
        unknown, so any later edit of the file publishes it.
        """
        indexed = self._indexed_at_start.get(document_id)
        if indexed is None:
            return None
        return Published(document_id, indexed.version, indexed.deleted)

    def _scan(self) -> dict[str, FolderFile]:
        """Every document file by id, unreadable ones included (they are not gone)."""
        files: dict[str, FolderFile] = {}
        for file in self.source.scan():  # lstat/stat only: nothing is opened here
            document_id = document_id_for(file.relative)
            if document_id in files:
                if self._bad.get(file.relative) != (file.size, file.mtime_ns):
                    log.error("two files have one document id; the second is ignored",
                              document_id=document_id, kept=files[document_id].relative,
                              ignored=file.relative)
                    self._bad[file.relative] = (file.size, file.mtime_ns)
                continue
            files[document_id] = file
        return files

    def _upsert_if_changed(
        self, document_id: str, file: FolderFile, published: Published | None,
        report: SyncReport,
        *, reread: bool,
    ) -> bool:
        """Publish an upsert if needed; False only when publishing failed."""
        if not reread and published is not None and not published.deleted and (
            published.relative_path, published.size, published.mtime_ns
        ) == (file.relative, file.size, file.mtime_ns):
            return True  # the very file already published
        if not reread and self._bad.get(file.relative) == (file.size, file.mtime_ns):
            return True  # already reported as unreadable, unchanged since
        if file.unreadable is not None:
            return self._skip(file, str(file.unreadable), report)
        try:
            document = self.source.document_at(file.relative, file.path, document_id)
        except DocumentNotFoundError:
            return True  # removed since the listing: the next pass sees it gone
        except UnreadableFileError as exc:
            return self._skip(file, str(exc.reason), report)
        except SourceDataError as exc:
            return self._skip(file, str(exc), report)
        self._bad.pop(file.relative, None)
        digest = self._digest(file.relative, document.content_type, document.content)
        seen = Published(document_id, document.version, False, digest,
                         file.relative, file.size, file.mtime_ns)
        if published is not None and not published.deleted and (
            published.content_hash in (digest, None) and document.version <= published.version
        ):
            self._record(dataclasses.replace(seen, version=published.version))
            return True  # same content (or indexed before, unchanged version): nothing to send
        version = self._again_or_next(document_id, self._lacking.pop(document_id, None), digest,
                                      document.version)
        try:
            event = ChangeEvent(
                event_id=f"folder-{uuid.uuid4().hex}",
                document_id=document_id,
                action=Action.UPSERT,
                version=version,
                changed_at=document.changed_at,
                received_at=self.clock(),
                content_type=document.content_type,
                content=document.content,
                metadata=document.metadata,
                source=self.source.name,
            )
        except pydantic.ValidationError as exc:
            return self._skip(file, f"not a valid change event: {exc.errors()[0]['msg']}", report)
        if not self._publish(event, report):
            return False
        self._record(dataclasses.replace(seen, version=version))
        report.upserts += 1
        return True

    def _digest(self, relative: str, content_type: str, content: str) -> str:
        """What the watcher remembers of a published file: its content and, when a rule of
        ``default_access_labels`` covers its path, that rule's labels, so a file whose
        default changed is sent again at the next start (no rule: the content alone, as
        before the setting existed)."""
        text = f"{content_type}\0{content}"
        labels = self.source.default_access_labels.labels_for(relative)
        if labels is not None:
            text += "\0default access_labels: " + ",".join(labels)
        return hashlib.sha256(text.encode()).hexdigest()

    def _again_or_next(self, document_id: str, lacking: Published | None, digest: str | None,
                       wanted: int) -> int:
        """The version to send a change with at start-up.

        ``lacking``: what was published for this id but is not in the index. The same
        change again (same content, or a delete again) goes at the version it was
        published with, so a copy still queued is a harmless redelivery instead of a
        version bump per restart; otherwise ``_next_version``.
        """
        if lacking is not None and lacking.version >= wanted and (
            lacking.deleted if digest is None else
            (not lacking.deleted and lacking.content_hash == digest)
        ):
            indexed = self.index.get_state(document_id) if self.index is not None else None
            if indexed is None or indexed.version < lacking.version:
                return lacking.version
        return self._next_version(document_id, wanted)

    def _next_version(self, document_id: str, wanted: int) -> int:
        """``wanted`` unless something at or above it was published or indexed: then one more."""
        floor = 0
        if self._known is not None and document_id in self._known:
            floor = self._known[document_id].version
        if self.index is not None:
            indexed = self.index.get_state(document_id)
            if indexed is not None:
                floor = max(floor, indexed.version)
        return wanted if wanted > floor else floor + 1

    def _delete_event(self, document_id: str, version: int) -> ChangeEvent:
        now = self.clock()
        return ChangeEvent(
            event_id=f"folder-{uuid.uuid4().hex}", document_id=document_id,
            action=Action.DELETE, version=version, changed_at=now, received_at=now,
            source=self.source.name,
        )

    def _publish(self, event: ChangeEvent, report: SyncReport) -> bool:
        try:
            self.publisher.publish(event)
        except PublishError as exc:
            log.warning("publish failed; the watcher retries", document_id=event.document_id,
                        action=event.action.value, version=event.version, error=str(exc))
            report.publish_failed = True
            return False
        log.info("published", document_id=event.document_id, action=event.action.value,
                 version=event.version)
        return True

    def _skip(self, file: FolderFile, reason: str, report: SyncReport) -> bool:
        log.warning("file skipped: not a readable document", path=shown_name(str(file.path)),
                    reason=reason)
        self._bad[file.relative] = (file.size, file.mtime_ns)
        report.skipped_files += 1
        return True

    def _record(self, published: Published) -> None:
        self.state.record(published)
        if not self._caught_up:  # sent (or found current) since the start: the index is
            self._resent.add(published.document_id)  # no longer compared for this id
        if self._known is not None:
            self._known[published.document_id] = published
