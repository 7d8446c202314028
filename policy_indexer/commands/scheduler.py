"""``policy-indexer scheduler``: the nightly reconcile and the hourly sweep, with /metrics.

Runs until SIGTERM or SIGINT. Several replicas may run; a lease per job lets one
act per occurrence.
"""

from __future__ import annotations

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.reconcile import run_scheduler
from policy_indexer.settings import Settings


@click.command()
@click.option("--port", type=int, default=None,
              help="Port of /metrics (default: settings.scheduler_metrics_port; 0: any).")
@click.pass_obj
@says_errors("scheduler cannot start")
def scheduler(settings: Settings, port: int | None) -> None:
    """Run the reconcile on its cron schedule and the sweep at its interval."""
    run_scheduler(settings, port=port, echo=click.echo)
