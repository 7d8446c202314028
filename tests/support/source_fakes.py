"""An in-memory source (a fake of our own interface) for monitor and reindex unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from sources.base import SourceDocument, SourceEntry
from sources.errors import DocumentNotFoundError, SourceError


@dataclass
class ListSource:
    entries: dict[str, SourceEntry] = field(default_factory=dict)
    contents: dict[str, str] = field(default_factory=dict)
    fail_with: SourceError | None = None

    @property
    def name(self) -> str:
        return "memory"

    def put(self, entry: SourceEntry, content: str = "# Doc\n\ntext") -> None:
        self.entries[entry.document_id] = entry
        self.contents[entry.document_id] = content

    def list_documents(self) -> Iterator[SourceEntry]:
        for number, entry in enumerate(list(self.entries.values())):
            if self.fail_with is not None and number >= len(self.entries) // 2:
                raise self.fail_with  # fail midway, after some entries were yielded
            yield entry
        if self.fail_with is not None:
            raise self.fail_with

    def get_document(self, document_id: str) -> SourceDocument:
        entry = self.entries.get(document_id)
        if entry is None or entry.deleted:
            raise DocumentNotFoundError(document_id)
        return SourceDocument(document_id, entry.version, entry.changed_at,
                              self.contents[document_id])

    def close(self) -> None:
        return None
