"""``policy-indexer monitor``: the freshness monitor, serving /metrics (or ``--once``)."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from metrics.freshness import FreshnessSnapshot
from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.monitor import monitor_once, run_monitor
from policy_indexer.settings import Settings


@click.command()
@click.option("--port", type=int, default=None,
              help="Port of /metrics (default: settings.monitor_metrics_port).")
@click.option("--interval", type=float, default=None,
              help="Seconds between cycles (default: settings.monitor_interval_seconds).")
@click.option("--once", is_flag=True, help="Run one cycle, print a summary, exit.")
@click.pass_obj
@says_errors("monitor failed")
def monitor(settings: Settings, port: int | None, interval: float | None, once: bool) -> None:
    """Measure how far the index is behind the source, and serve it on /metrics."""
    if once:
        _print(monitor_once(settings))
    else:
        run_monitor(settings, port=port, interval_s=interval)


def _print(snapshot: FreshnessSnapshot) -> None:
    now = datetime.now(UTC)
    click.echo(f"source documents:  {snapshot.source_documents}")
    click.echo(f"indexed documents: {snapshot.indexed_documents}")
    click.echo(f"behind:            {snapshot.behind} {snapshot.behind_by_status}")
    click.echo(f"max lag:           {_duration(snapshot.max_lag_seconds(now))}")
    click.echo(f"p95 lag:           {_duration(snapshot.lag_quantile_seconds(0.95, now))}")
    click.echo(f"leftover chunks:   {snapshot.leftover_versions} "
               f"in {snapshot.leftover_documents} documents")
    for lag in snapshot.most_lagging[:20]:
        click.echo(f"  {_duration(lag.seconds(now)):>14}  {lag.status.value:<18} {lag.document_id}")


def _duration(seconds: float) -> str:
    """``0 s``, ``42 s``, ``3h 05m``, ``1594d 12h``: readable at a glance."""
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs} s"
