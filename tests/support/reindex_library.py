"""A small policy library kept as a change log (reindex tests and bench).

Each change is appended to ``events`` (for ``expected_index``) and, on
``write()``, to a change-log file that ``sources.changelog.ChangeLogSource``
reads: the source's state is the log folded to each document's last change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from events.model import Action, ChangeEvent, EventMetadata

BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)


def body(document_id: str, version: int) -> str:
    return (
        f"# Policy {document_id}\n\nThis is version {version} of {document_id}.\n\n"
        f"## Refunds\n\nRefunds for {document_id} take {version} days.\n\n"
        f"## Exchanges\n\nExchanges of {document_id} are free.\n"
    )


@dataclass
class Library:
    path: Path
    events: list[ChangeEvent] = field(default_factory=list)
    _written: int = 0

    def upsert(self, document_id: str, version: int) -> ChangeEvent:
        return self._add(document_id, version, Action.UPSERT, body(document_id, version))

    def delete(self, document_id: str, version: int) -> ChangeEvent:
        return self._add(document_id, version, Action.DELETE, None)

    def _add(self, doc: str, version: int, action: Action, content: str | None) -> ChangeEvent:
        seq = len(self.events) + 1
        event = ChangeEvent(
            event_id=f"e{seq}", document_id=doc, action=action, version=version,
            changed_at=BASE_TIME + timedelta(minutes=seq),
            content_type="text/markdown" if content is not None else None, content=content,
            metadata=EventMetadata(source_path=f"{doc}.md") if content is not None else
            EventMetadata(),
        )
        self.events.append(event)
        return event

    def write(self) -> None:
        """Append the changes not yet in the file."""
        with self.path.open("a", encoding="utf-8") as out:
            for seq, event in enumerate(self.events[self._written:], start=self._written + 1):
                record = {
                    "seq": seq, "document_id": event.document_id, "action": event.action.value,
                    "version": event.version, "changed_at": event.changed_at.isoformat(),
                    "path": f"{event.document_id}.md",
                }
                if event.content is not None:
                    record["content"] = event.content
                out.write(json.dumps(record) + "\n")
        self._written = len(self.events)
