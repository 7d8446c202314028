"""A change log in the corpus format as a source (tests, replays, benchmarks).

The source's state is the log folded to the last change of each document id:
an upsert is a live document at that version, a delete a tombstone. The file
is read again when its size or modification time changes, so a test can
append changes while a monitor watches it. A plain (not gzip) log that only grew
(same file, the bytes before the old end unchanged, ending with a newline) is
read from where the last read stopped: a listing after an append costs the
appended lines, not the whole log. ``until_seq`` stops the fold at a
position of the stream (the library as it stood at that change).

Listing keeps no content in memory; ``get_document`` reads the file once
more for the contents of the current upserts and caches them until the file
changes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from events.changelog import CHANGELOG_SOURCE, ChangeLogError, read_records
from events.model import EventMetadata
from sources.base import (
    SourceDocument,
    SourceEntry,
    document_id_problem,
    parse_changed_at,
    parse_version,
)
from sources.errors import DocumentNotFoundError, SourceDataError, SourceUnavailableError


class ChangeLogSource:
    def __init__(self, path: str | Path, *, until_seq: int | None = None) -> None:
        self.path = Path(path)
        self.until_seq = until_seq
        self._stamp: tuple[int, int] | None = None
        # where the last read ended: (inode, byte offset, lines, the bytes before it)
        self._end: tuple[int, int, int, bytes] | None = None
        self._entries: dict[str, SourceEntry] = {}
        self._contents: dict[str, SourceDocument] | None = None

    @property
    def name(self) -> str:
        return CHANGELOG_SOURCE

    def _records(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(where, record) per line; raises the source errors."""
        try:
            for where, record in read_records(self.path):
                seq = record.get("seq")
                if self.until_seq is not None and isinstance(seq, int) and seq > self.until_seq:
                    return
                yield where, record
        except ChangeLogError as exc:
            raise SourceDataError(str(exc)) from exc
        except OSError as exc:  # missing file, permission, bad gzip
            raise SourceUnavailableError(f"cannot read change log {self.path}: {exc}") from exc

    def _file_stamp(self) -> tuple[int, int]:
        try:
            st = os.stat(self.path)
        except OSError as exc:
            raise SourceUnavailableError(f"cannot read change log {self.path}: {exc}") from exc
        return (st.st_size, st.st_mtime_ns)

    def _load(self) -> dict[str, SourceEntry]:
        stamp = self._file_stamp()
        if stamp == self._stamp:
            return self._entries
        appended = self._appended()
        if appended is not None:
            entries, end = appended
        else:
            entries = {}
            for where, record in self._records():
                entry = _entry(where, record)
                entries[entry.document_id] = entry
            end = self._end_of_file(stamp[0])
        self._entries, self._stamp, self._contents, self._end = entries, stamp, None, end
        return entries

    def _end_of_file(self, size: int) -> tuple[int, int, int, bytes] | None:
        """Where the next read may start after a whole read of the first ``size`` bytes
        (the size seen before reading; lines appended meanwhile are read again, which
        changes nothing). None: the next read is whole."""
        if self.until_seq is not None or self.path.suffix == ".gz" or size == 0:
            return None
        try:
            with self.path.open("rb") as f:
                st = os.fstat(f.fileno())
                lines, left = 0, size
                while left > 0:
                    block = f.read(min(left, 1 << 20))
                    if not block:
                        return None
                    lines += block.count(b"\n")
                    left -= len(block)
                    last = block
                f.seek(max(0, size - _TAIL_CHECK))
                last = f.read(min(size, _TAIL_CHECK))
        except OSError:
            return None
        if not last.endswith(b"\n"):
            return None  # a line being written: read the whole log next time
        return st.st_ino, size, lines, last

    def _appended(self) -> tuple[dict[str, SourceEntry], tuple[int, int, int, bytes] | None] | None:
        """The entries after reading only what was appended since the last read, or None."""
        if self._end is None or self._stamp is None:
            return None
        inode, offset, lines, last = self._end
        try:
            with self.path.open("rb") as f:
                st = os.fstat(f.fileno())
                if st.st_ino != inode or st.st_size <= offset:
                    return None
                f.seek(offset - len(last))
                if f.read(len(last)) != last:
                    return None  # rewritten, not appended
                tail = f.read()
        except OSError as exc:
            raise SourceUnavailableError(f"cannot read change log {self.path}: {exc}") from exc
        if not tail.endswith(b"\n"):
            return None
        entries = dict(self._entries)
        number = lines
        for raw in tail.split(b"\n")[:-1]:
            number += 1
            if not raw.strip():
                continue
            where = f"{self.path}:{number}"
            try:
                record = json.loads(raw)
            except ValueError as exc:
                raise SourceDataError(f"{where}: not JSON: {exc}") from exc
            if not isinstance(record, dict):
                raise SourceDataError(f"{where}: expected an object, got {record!r:.80}")
            entry = _entry(where, record)
            entries[entry.document_id] = entry
        end = (inode, offset + len(tail), number, tail[-_TAIL_CHECK:])
        if len(end[3]) < _TAIL_CHECK:
            end = (inode, end[1], number, (last + tail)[-_TAIL_CHECK:])
        return entries, end

    def list_documents(self) -> Iterator[SourceEntry]:
        return iter(list(self._load().values()))

    def get_document(self, document_id: str) -> SourceDocument:
        entries = self._load()
        entry = entries.get(document_id)
        if entry is None or entry.deleted:
            raise DocumentNotFoundError(document_id)
        if self._contents is None:
            contents: dict[str, SourceDocument] = {}
            for where, record in self._records():
                content = record.get("content")
                if record.get("action") != "upsert" or not isinstance(content, str):
                    continue
                path = record.get("path")
                contents[str(record["document_id"])] = SourceDocument(
                    document_id=str(record["document_id"]),
                    version=parse_version(record.get("version"), where),
                    changed_at=parse_changed_at(record.get("changed_at"), where),
                    content=content,
                    metadata=EventMetadata(source_path=path if isinstance(path, str) else None),
                )
            self._contents = contents
        document = self._contents.get(document_id)
        if document is None or document.version != entry.version:
            raise SourceDataError(
                f"{self.path}: the upsert of {document_id!r} at version {entry.version} "
                "carries no content"
            )
        return document

    def close(self) -> None:
        self._entries, self._contents, self._stamp, self._end = {}, None, None, None


# Bytes before the end of the last read checked again before reading only the rest.
_TAIL_CHECK = 256


def _entry(where: str, record: dict[str, Any]) -> SourceEntry:
    """One line's change as the document's entry; raises ``SourceDataError``."""
    try:
        document_id = record["document_id"]
        action = record["action"]
    except KeyError as exc:
        raise SourceDataError(f"{where}: missing field {exc}") from exc
    if not isinstance(document_id, str) or not document_id:
        raise SourceDataError(f"{where}: document_id {document_id!r} is not a string")
    bad_id = document_id_problem(document_id)
    if bad_id is not None:  # as the replay refuses it (events.changelog)
        raise SourceDataError(f"{where}: {bad_id.detail}")
    if action not in ("upsert", "delete"):
        raise SourceDataError(f"{where}: action {action!r} is not upsert or delete")
    return SourceEntry(
        document_id=document_id,
        version=parse_version(record.get("version"), where),
        changed_at=parse_changed_at(record.get("changed_at"), where),
        deleted=action == "delete",
    )
