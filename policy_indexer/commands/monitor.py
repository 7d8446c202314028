"""``policy-indexer monitor``: the freshness monitor, serving /metrics.

Every ``monitor_interval_seconds`` it lists the configured source and scans the
index (through the Store protocol), and serves per-document lag, max and p95
lag, documents behind, leftover versions and the source listing's health on
``http://<metrics_host>:<monitor_metrics_port>/metrics``. ``--once`` runs one
cycle, prints a summary and exits 1 when the source or index could not be read.
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime, timedelta
from types import FrameType

import click
import structlog
from prometheus_client import CollectorRegistry, start_http_server

from metrics.collector import FreshnessCollector
from metrics.monitor import FreshnessMonitor
from policy_indexer import __version__
from policy_indexer.commands.reindex import open_index
from policy_indexer.settings import Settings
from policy_indexer.sources import SourceNotConfiguredError, open_configured_source

log = structlog.get_logger(__name__)


@click.command()
@click.option("--port", type=int, default=None,
              help="Port of /metrics (default: settings.monitor_metrics_port).")
@click.option("--interval", type=float, default=None,
              help="Seconds between cycles (default: settings.monitor_interval_seconds).")
@click.option("--once", is_flag=True, help="Run one cycle, print a summary, exit.")
@click.pass_obj
def monitor(settings: Settings, port: int | None, interval: float | None, once: bool) -> None:
    """Measure how far the index is behind the source, and serve it on /metrics."""
    try:
        source = open_configured_source(settings)
    except (SourceNotConfiguredError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    store = open_index(settings)
    series = settings.monitor_max_document_series
    freshness = FreshnessMonitor(
        source, store,
        max_series=None if series == "all" else series,
        grace=timedelta(seconds=settings.sweep_grace_seconds),
    )
    try:
        if once:
            _once(freshness)
            return
        registry = CollectorRegistry()
        registry.register(FreshnessCollector(
            freshness,
            lag_bound_seconds=settings.freshness_lag_bound_seconds,
            leftover_bound_seconds=settings.leftover_bound_seconds,
            version=__version__,
        ))
        server, thread = start_http_server(
            settings.monitor_metrics_port if port is None else port,
            addr=settings.metrics_host, registry=registry,
        )

        def on_signal(signum: int, _frame: FrameType | None) -> None:
            log.info("stop requested", signal=signal.Signals(signum).name)
            freshness.stop()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        log.info("monitor started", source=source.name, metrics_port=server.server_address[1],
                 interval_s=interval or settings.monitor_interval_seconds)
        try:
            freshness.run_forever(interval or settings.monitor_interval_seconds)
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
    finally:
        source.close()
        store.close()


def _once(freshness: FreshnessMonitor) -> None:
    snapshot = freshness.run_cycle()
    if snapshot is None:
        raise click.ClickException(str(freshness.status.last_error))
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
