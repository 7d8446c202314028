"""The record of every reindex job run: start, end, outcome and counts.

A record is saved when the run starts (outcome ``running``) and again when it
ends, so a run killed mid-way stays visible as ``running`` with no end. The
scheduler reads the last success back at start-up and exports it, so the
"no success for 26 hours" alert survives restarts.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Protocol

RUNNING = "running"


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    job: str  # reconcile | sweep
    trigger: str  # scheduled | manual
    holder: str  # host:pid of the process that ran it
    started_at: datetime
    ended_at: datetime | None = None
    outcome: str = RUNNING  # success | failed | refused | running
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    dry_run: bool = False

    def finished(
        self, ended_at: datetime, outcome: str, counts: dict[str, int], error: str | None
    ) -> RunRecord:
        return replace(self, ended_at=ended_at, outcome=outcome, counts=counts, error=error)

    @property
    def duration_seconds(self) -> float | None:
        if self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()


class RunLog(Protocol):
    def ensure_ready(self) -> None:
        """Create what the log needs (idempotent)."""

    def save(self, record: RunRecord) -> None:
        """Insert or replace the record with this ``run_id``."""

    def last_success(self, job: str) -> RunRecord | None:
        """The latest-ending successful, non-dry run of ``job``."""

    def recent(self, job: str, limit: int = 10) -> list[RunRecord]:
        """The ``limit`` latest-started runs of ``job``, newest first."""


class InMemoryRunLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: dict[str, RunRecord] = {}

    def ensure_ready(self) -> None:
        return None

    def save(self, record: RunRecord) -> None:
        with self._lock:
            self.records[record.run_id] = record

    def last_success(self, job: str) -> RunRecord | None:
        with self._lock:
            done = [
                r for r in self.records.values()
                if r.job == job and r.outcome == "success" and not r.dry_run and r.ended_at
            ]
        return max(done, key=lambda r: r.ended_at or r.started_at, default=None)

    def recent(self, job: str, limit: int = 10) -> list[RunRecord]:
        with self._lock:
            runs = [r for r in self.records.values() if r.job == job]
        return sorted(runs, key=lambda r: r.started_at, reverse=True)[:limit]
