"""Every search is a run: what was asked, by whom, and which passages came back.

A reply that cites a clause can then be checked against the run it came from
(``retrieval.citations``): was that clause among the passages returned, at which
version, with which text. ``RecordingSearcher`` (``retrieval.recording``) writes
a ``SearchRun`` for each answer; ``RunLog`` keeps them:

- ``MemoryRunLog`` here (tests, one-shot commands);
- ``SQLiteRunLog`` (``retrieval.runs_sqlite``): the embedded mode, a file of its own;
- ``ElasticsearchRunLog`` (``retrieval.runs_es``): the Kafka mode, ``<prefix>-search-runs``.

One contract suite holds the three to the same behaviour
(``tests/unit/retrieval/test_run_log_contract.py``). What a run keeps:

- when, and the caller's **key id** (never the key);
- the request: question, scope, as_of, and the labels the search ran with;
- each passage: chunk id, document, clause, version, ``ranked`` or ``neighbour_of``,
  and the SHA-256 of its text, so a later check can tell whether a clause's text
  changed between the version a reply cites and the current one (the index keeps
  only current versions' text).

A run belongs to its caller: ``get(run_id, key_id)`` of another key id is
``None``, exactly as for an id that never existed, so a run id is no way into
another caller's questions. Retention: ``prune(before=..., keep=...)`` drops runs
older than ``before`` and all but the newest ``keep``; the hourly sweep calls it
(``RunRetention``).

Errors: a log that cannot be written or read raises ``RunLogError`` (the
recording wrapper counts and logs a write failure and answers the search with
``run_id: null``).
"""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal, Protocol

from store.errors import StoreError

RUN_ID = re.compile(r"^[0-9a-f]{32}$")
DEFAULT_RETENTION_DAYS = 30
DEFAULT_MAX_RUNS = 1_000_000

Via = Literal["ranked", "neighbour_of"]


class RunLogError(StoreError):
    """The run log could not be written or read (the message says which and why). A
    ``StoreError``: every command that reports an unreachable index reports it too."""


def new_run_id() -> str:
    return uuid.uuid4().hex


def text_hash(text: str) -> str:
    """What a run keeps of a passage's text: enough to tell "changed" from "the same"."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class RunPassage:
    chunk_id: str
    document_id: str
    clause: str
    version: int
    via: Via
    text_sha256: str

    def to_json(self) -> dict[str, Any]:
        return {"chunk_id": self.chunk_id, "document_id": self.document_id,
                "clause": self.clause, "version": self.version, "via": self.via,
                "text_sha256": self.text_sha256}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunPassage:
        via: Via = "neighbour_of" if data.get("via") == "neighbour_of" else "ranked"
        return cls(str(data["chunk_id"]), str(data["document_id"]), str(data["clause"]),
                   int(data["version"]), via, str(data["text_sha256"]))


@dataclass(frozen=True)
class SearchRun:
    run_id: str
    key_id: str
    at: datetime
    question: str
    scope: tuple[str, ...]
    as_of: date
    labels: tuple[str, ...]
    status: str
    passages: tuple[RunPassage, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "key_id": self.key_id, "at": self.at.isoformat(),
                "question": self.question, "scope": list(self.scope),
                "as_of": self.as_of.isoformat(), "labels": list(self.labels),
                "status": self.status, "passages": [p.to_json() for p in self.passages]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchRun:
        try:
            return cls(
                run_id=str(data["run_id"]), key_id=str(data["key_id"]),
                at=datetime.fromisoformat(str(data["at"])), question=str(data["question"]),
                scope=tuple(str(s) for s in data.get("scope") or ()),
                as_of=date.fromisoformat(str(data["as_of"])),
                labels=tuple(str(s) for s in data.get("labels") or ()),
                status=str(data.get("status")),
                passages=tuple(RunPassage.from_json(p) for p in data.get("passages") or ()),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise RunLogError(f"run {data.get('run_id')!r} is malformed: {exc}") from exc


class RunLog(Protocol):
    def ensure_ready(self) -> None:
        """Create what the log needs (idempotent)."""

    def record(self, run: SearchRun) -> None:
        """Keep ``run`` (its id is new); ``RunLogError`` if it cannot."""

    def get(self, run_id: str, key_id: str) -> SearchRun | None:
        """The run of that id made by ``key_id``; None if there is none (another key's too)."""

    def prune(self, *, before: datetime, keep: int) -> int:
        """Drop runs made before ``before``, then all but the newest ``keep``; how many."""

    def count(self) -> int:
        """Runs held."""

    def close(self) -> None:
        """Release connections."""


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class RunRetention:
    """The sweep's part for the search run log: age and count, from the settings."""

    log: RunLog
    days: int = DEFAULT_RETENTION_DAYS
    max_runs: int = DEFAULT_MAX_RUNS
    clock: Callable[[], datetime] = utcnow

    def __post_init__(self) -> None:
        if self.days < 1:
            raise ValueError(f"retention days={self.days} must be at least 1")
        if self.max_runs < 1:
            raise ValueError(f"max_runs={self.max_runs} must be at least 1")

    def prune(self) -> int:
        return self.log.prune(before=self.clock() - timedelta(days=self.days),
                              keep=self.max_runs)


class MemoryRunLog:
    """``RunLog`` in a dict (tests, and a process that keeps nothing)."""

    def __init__(self) -> None:
        self._runs: dict[str, SearchRun] = {}
        self._lock = threading.Lock()

    def ensure_ready(self) -> None:
        return None

    def record(self, run: SearchRun) -> None:
        with self._lock:
            self._runs[run.run_id] = run

    def get(self, run_id: str, key_id: str) -> SearchRun | None:
        with self._lock:
            run = self._runs.get(run_id)
        return run if run is not None and run.key_id == key_id else None

    def prune(self, *, before: datetime, keep: int) -> int:
        with self._lock:
            ordered = sorted(self._runs.values(), key=lambda r: (r.at, r.run_id), reverse=True)
            kept = [r for r in ordered if r.at >= before][:max(keep, 0)]
            dropped = len(self._runs) - len(kept)
            self._runs = {r.run_id: r for r in kept}
        return dropped

    def count(self) -> int:
        with self._lock:
            return len(self._runs)

    def close(self) -> None:
        return None
