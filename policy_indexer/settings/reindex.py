"""The nightly reconcile, the hourly sweep and the scheduler that runs them."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger
from pydantic import BaseModel, Field, field_validator

from deleter.sweep import DEFAULT_GRACE
from reindex.limits import BATCH_SIZE, MAX_DELETE_FRACTION


class ReindexSettings(BaseModel):
    """The reindex section of ``Settings``."""

    reindex_cron: str = Field(
        "0 2 * * *",
        description="When the reconcile runs: a 5-field crontab (minute hour day month "
        "day-of-week) in reindex_timezone. Default: 02:00 every night.",
    )
    reindex_timezone: str = Field("UTC", description="IANA zone of reindex_cron (Europe/Paris).")
    reindex_max_delete_fraction: float = Field(
        MAX_DELETE_FRACTION,
        ge=0,
        le=1,
        description="A reconcile refuses to delete more than this fraction of the indexed "
        "documents unless run with --allow-mass-delete.",
    )
    reindex_batch_size: int = Field(
        BATCH_SIZE, ge=1, le=10_000,
        description="Change events a reconcile hands to the worker's batch processing at once.",
    )
    reindex_misfire_grace_seconds: float = Field(
        3600.0, gt=0, description="A job that could not start on time still runs this late."
    )
    sweep_interval_seconds: float = Field(3600.0, gt=0, description="How often the sweep runs.")
    sweep_grace_seconds: float = Field(
        DEFAULT_GRACE.total_seconds(), ge=0,
        description="The sweep leaves younger chunks above a document's state alone."
    )
    scheduler_lease_seconds: float = Field(
        300.0,
        gt=0,
        description="A job's lease (one scheduler replica acts) expires this long after its "
        "last renewal; renewed every third of it while the job runs.",
    )
    scheduler_metrics_port: int = Field(9466, ge=0, le=65535, description="Scheduler's /metrics.")

    @field_validator("reindex_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"reindex_timezone {value!r} is not an IANA time zone") from exc
        return value

    @field_validator("reindex_cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        try:
            CronTrigger.from_crontab(value, timezone="UTC")
        except ValueError as exc:
            raise ValueError(f"reindex_cron {value!r} is not a 5-field crontab: {exc}") from exc
        return value
