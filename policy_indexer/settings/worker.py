"""The indexing worker (Kafka and embedded alike): how many, when it commits, how it
backs off from a transient failure, when an unexpected error dead-letters an event."""

from __future__ import annotations

from pydantic import BaseModel, Field

from consumers.commit_policy import COMMIT_EVERY_RECORDS, COMMIT_EVERY_SECONDS, CommitPolicy
from consumers.retry import RETRY_INITIAL_SECONDS, RETRY_MAX_SECONDS, RetryPolicy
from consumers.visibility import REFRESH_CAUGHT_UP_SECONDS, VisibilityPolicy


class WorkerSettings(BaseModel):
    """The worker section of ``Settings``."""

    worker_processes: int = Field(1, ge=1, le=64, description="Worker processes `run` starts.")
    commit_every_records: int = Field(COMMIT_EVERY_RECORDS, ge=1)
    commit_every_seconds: float = Field(COMMIT_EVERY_SECONDS, gt=0)
    replay_batch_records: int = Field(
        1000, ge=1,
        description="Changes the embedded `replay` worker takes a poll. The whole log is queued "
        "first, so a batch writes each of its documents' newest version once; measured on 1,234 "
        "mozilla changes: 200 14.0 s, 500 10.9 s, 1,000 10.2 s, 2,000 10.8 s.",
    )
    refresh_when_caught_up: bool = Field(
        True,
        description="A worker that has caught up (a poll short of a full batch) refreshes the "
        "index after its batch, at most every 0.2 s, so a change is searchable without "
        "waiting for the index's own refresh (1 s on Elasticsearch); a worker working through "
        "a backlog never does. false: leave it to the index.",
    )
    retry_initial_seconds: float = Field(RETRY_INITIAL_SECONDS, gt=0)
    retry_max_seconds: float = Field(RETRY_MAX_SECONDS, gt=0)
    retry_max_attempts: int | None = Field(
        None, ge=1, description="Attempts before giving up on a transient failure; None: forever."
    )
    worker_unexpected_error_attempts: int = Field(
        3, ge=1, le=100, description="Tries of one event that raises an unexpected exception "
        "before it is dead-lettered (reason 'unexpected') and the worker goes on.")

    def retry_policy(self) -> RetryPolicy:
        """How a worker backs off from transient failures (Kafka and embedded alike)."""
        return RetryPolicy(
            initial_s=self.retry_initial_seconds,
            max_s=self.retry_max_seconds,
            max_attempts=self.retry_max_attempts,
        )

    def visibility_policy(self) -> VisibilityPolicy:
        """When a caught-up worker refreshes the index after its batch."""
        return VisibilityPolicy(REFRESH_CAUGHT_UP_SECONDS if self.refresh_when_caught_up else None)

    def commit_policy(self) -> CommitPolicy:
        """When a worker commits what it has processed (Kafka and embedded alike)."""
        return CommitPolicy(self.commit_every_records, self.commit_every_seconds)
