"""A change log in the corpus format as a source (tests, replays, benchmarks).

The source's state is the log folded to the last change of each document id:
an upsert is a live document at that version, a delete a tombstone. The file
is read again when its size or modification time changes, so a test can
append changes while a monitor watches it. ``until_seq`` stops the fold at a
position of the stream (the library as it stood at that change).

Listing keeps no content in memory; ``get_document`` reads the file once
more for the contents of the current upserts and caches them until the file
changes.
"""

from __future__ import annotations

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
        entries: dict[str, SourceEntry] = {}
        for where, record in self._records():
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
            entries[document_id] = SourceEntry(
                document_id=document_id,
                version=parse_version(record.get("version"), where),
                changed_at=parse_changed_at(record.get("changed_at"), where),
                deleted=action == "delete",
            )
        self._entries, self._stamp, self._contents = entries, stamp, None
        return entries

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
        self._entries, self._contents, self._stamp = {}, None, None
