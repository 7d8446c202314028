"""A lease per job, so that only one scheduler replica runs it, once per occurrence.

The lease is one record per job in a shared backend (a document in
Elasticsearch, a row in SQLite) changed only by compare-and-set: Elasticsearch's
``op_type=create`` / ``if_seq_no`` + ``if_primary_term``, SQLite's ``BEGIN
IMMEDIATE``. A replica may take it when nobody holds it or the holder's
expiry has passed (a crashed holder loses it after ``ttl``). The holder renews
it while the job runs and gives it back when done.

Two replicas fire the same occurrence within the misfire grace time of each
other; a scheduled acquisition therefore also refuses when another scheduled
run of the job *started* less than ``spacing`` ago, so a fast run that already
released the lease is not run again by a slower replica. Expiry relies on the
replicas' clocks agreeing to well within ``ttl`` (NTP).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Protocol

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class LeaseRecord:
    job: str
    holder: str
    token: str  # one per acquisition: renew/release only what we took
    expires_at: datetime
    scheduled_started_at: datetime = EPOCH  # last scheduled acquisition, any holder


class LeaseBackend(Protocol):
    """Compare-and-set storage of one record per job. ``cas`` is opaque."""

    def ensure_ready(self) -> None: ...

    def read(self, job: str) -> tuple[LeaseRecord | None, object]: ...

    def write(self, record: LeaseRecord, cas: object) -> bool:
        """Write if the record is still as read with ``cas`` (``None``: absent); else False."""


def refusal(
    current: LeaseRecord | None, now: datetime, spacing: timedelta | None
) -> str | None:
    """Why the lease cannot be taken now, or None."""
    if current is None:
        return None
    if current.expires_at > now:
        return f"held by {current.holder} until {current.expires_at.isoformat()}"
    if spacing is not None and now - current.scheduled_started_at < spacing:
        return (
            f"already run for this occurrence by {current.holder} at "
            f"{current.scheduled_started_at.isoformat()}"
        )
    return None


class Lease:
    def __init__(self, backend: LeaseBackend, *, clock: Clock = utcnow) -> None:
        self.backend = backend
        self.clock = clock

    def acquire(
        self, job: str, holder: str, ttl: timedelta, *, spacing: timedelta | None = None
    ) -> tuple[LeaseRecord | None, str | None]:
        """(the record we now hold, None) or (None, why not). ``spacing``: scheduled runs."""
        current, cas = self.backend.read(job)
        now = self.clock()
        why = refusal(current, now, spacing)
        if why is not None:
            return None, why
        started = now if spacing is not None else (
            current.scheduled_started_at if current is not None else EPOCH
        )
        mine = LeaseRecord(job, holder, uuid.uuid4().hex, now + ttl, started)
        if not self.backend.write(mine, cas):
            return None, "taken by another replica at the same moment"
        return mine, None

    def renew(self, held: LeaseRecord, ttl: timedelta) -> LeaseRecord | None:
        """The renewed record, or None when the lease is no longer ours."""
        current, cas = self.backend.read(held.job)
        if current is None or current.token != held.token:
            return None
        renewed = replace(current, expires_at=self.clock() + ttl)
        return renewed if self.backend.write(renewed, cas) else None

    def release(self, held: LeaseRecord) -> None:
        current, cas = self.backend.read(held.job)
        if current is not None and current.token == held.token:
            self.backend.write(replace(current, expires_at=self.clock()), cas)


class InMemoryLeaseBackend:
    """For unit tests: the same compare-and-set, within one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, tuple[LeaseRecord, int]] = {}

    def ensure_ready(self) -> None:
        return None

    def read(self, job: str) -> tuple[LeaseRecord | None, object]:
        with self._lock:
            found = self._records.get(job)
        return (found[0], found[1]) if found else (None, None)

    def write(self, record: LeaseRecord, cas: object) -> bool:
        with self._lock:
            found = self._records.get(record.job)
            if (found[1] if found else None) != cas:
                return False
            self._records[record.job] = (record, (found[1] + 1) if found else 1)
            return True
