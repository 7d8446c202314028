"""Read a change log in the corpus format (``shared/corpora/README.md``) as ChangeEvents.

One JSON object per line (optionally gzip-compressed): ``seq``, ``document_id``,
``path``, ``action``, ``version``, ``changed_at``, ``commit`` and, for upserts,
``content``. The event id is derived from the log (``<name>:<seq>``), so a
replay of the same log publishes the same ids.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO

import pydantic

from events.model import MAX_SOURCE_VERSION, Action, ChangeEvent, EventMetadata

# The owner of what a change log brings (``sources.changelog.ChangeLogSource.name``), so the
# monitor and the reconcile over the same log compare these documents with it.
CHANGELOG_SOURCE = "changelog"


class ChangeLogError(ValueError):
    """A line of a change log is not a valid change; names the file and line."""


def _open(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def read_records(path: str | Path) -> Iterator[tuple[str, dict[str, object]]]:
    """``(where, record)`` of every non-blank line, ``where`` = ``file:line``: the one
    reader of the format (``read_changelog`` and ``sources.changelog`` build on it).

    Raises ``ChangeLogError`` for a line that is not a JSON object, ``OSError`` when
    the file cannot be read (missing, permission, bad gzip).
    """
    path = Path(path)
    with _open(path) as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise ChangeLogError(f"{where}: not JSON: {exc}") from exc
            if not isinstance(record, dict):
                raise ChangeLogError(f"{where}: expected an object, got {record!r:.80}")
            yield where, record


def event_from_line(record: dict[str, object], source: str) -> ChangeEvent:
    """The change of one line; ``ValueError`` (or a pydantic one) for a line the change
    event refuses, a version above what a source may stamp included."""
    action = Action(str(record["action"]))
    path = record.get("path")
    version = int(str(record["version"]))
    if version > MAX_SOURCE_VERSION:
        raise ValueError(f"version {version} is above the maximum {MAX_SOURCE_VERSION} a "
                         "source may stamp")
    return ChangeEvent(
        event_id=f"{source}:{record['seq']}",
        document_id=str(record["document_id"]),
        action=action,
        version=version,
        changed_at=datetime.fromisoformat(str(record["changed_at"]).replace("Z", "+00:00")),
        content_type="text/markdown" if action is Action.UPSERT else None,
        content=str(record["content"]) if action is Action.UPSERT else None,
        metadata=EventMetadata(source_path=str(path) if path is not None else None),
        source=CHANGELOG_SOURCE,
    )


def read_changelog(path: str | Path) -> Iterator[ChangeEvent]:
    """Yield the changes of the log in order; raise ``ChangeLogError`` on a bad line."""
    path = Path(path)
    source = path.name.removesuffix(".gz").removesuffix(".jsonl")
    for where, record in read_records(path):
        try:
            yield event_from_line(record, source)
        except (ValueError, KeyError, TypeError, pydantic.ValidationError) as exc:
            raise ChangeLogError(f"{where}: not a valid change: {exc}") from exc


def count_lines(path: str | Path) -> int:
    with _open(Path(path)) as lines:
        return sum(1 for line in lines if line.strip())
