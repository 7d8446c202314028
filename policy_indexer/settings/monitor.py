"""The freshness monitor: how often it measures, what it exports, and the bounds the
alerts compare against."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field


class MonitorSettings(BaseModel):
    """The monitor section of ``Settings``."""

    monitor_interval_seconds: float = Field(
        60.0, gt=0, description="How often the monitor lists the source and the index."
    )
    monitor_metrics_port: int = Field(9465, ge=0, le=65535, description="Monitor's /metrics.")
    monitor_max_document_series: Annotated[int, Field(ge=0)] | Literal["all"] = Field(
        100,
        description="Per-document lag series exported: the N most lagging, or 'all'.",
    )
    monitor_first_cycle_wait_seconds: float = Field(
        300.0, ge=0,
        description="The embedded run's monitor measures only once the first indexing is "
        "done (else it would report every document missing), or after this long at most.",
    )
    freshness_lag_bound_seconds: float = Field(
        3600.0,
        gt=0,
        description="THE lag bound: the max-lag alert fires above it. Exported by the monitor "
        "as policy_indexer_lag_bound_seconds, which the alert rule compares against.",
    )
    leftover_bound_seconds: float = Field(
        1800.0,
        gt=0,
        description="Leftover versions older than this fire an alert "
        "(exported as policy_indexer_leftover_bound_seconds).",
    )
