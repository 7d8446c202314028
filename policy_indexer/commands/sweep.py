"""``policy-indexer sweep``: find and delete leftover chunk versions across the index.

Works on the mode's index: the embedded SQLite file, or Elasticsearch. A
one-shot process: it prints what it did and logs the same report as one
structured line (``sweep finished``), rather than counting into a Prometheus
registry nobody scrapes before it exits. The long-lived processes that sweep on
a schedule (``policy-indexer scheduler``, the embedded run) count
``policy_indexer_sweep_leftovers_total``.
"""

from __future__ import annotations

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.reconcile import sweep_once
from policy_indexer.settings import Settings


@click.command()
@click.option("--dry-run", is_flag=True, help="Report leftovers without deleting them.")
@click.option("--grace-seconds", type=float, default=None,
              help="Leave chunks younger than this above their document's state "
                   "(default: settings.sweep_grace_seconds).")
@click.pass_obj
@says_errors("sweep failed")
def sweep(settings: Settings, dry_run: bool, grace_seconds: float | None) -> None:
    """Delete chunks whose version is not their document's current one."""
    report = sweep_once(settings, grace_s=grace_seconds, dry_run=dry_run)
    grace = settings.sweep_grace_seconds if grace_seconds is None else grace_seconds
    verb = "would delete" if dry_run else "deleted"
    click.echo(f"examined {report.examined} chunks")
    if not report.total_leftovers:
        click.echo("no leftovers: nothing to do")
    for reason, count in sorted(report.leftovers.items()):
        click.echo(f"  {reason}: {count}")
    for sample in report.samples:
        click.echo(f"    {sample}")
    if report.kept_in_grace:
        click.echo(f"kept {report.kept_in_grace} chunks younger than the grace period ({grace:g}s)")
    click.echo(f"{verb} {report.total_leftovers if dry_run else report.deleted} chunks")
