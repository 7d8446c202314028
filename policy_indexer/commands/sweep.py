"""``policy-indexer sweep``: find and delete leftover chunk versions across the index.

A one-shot process: it prints what it did and logs the same report as one
structured line (``sweep finished``), rather than counting into a Prometheus
registry nobody scrapes before it exits. The long-lived processes that sweep on
a schedule (``policy-indexer scheduler``, the embedded run) count
``policy_indexer_sweep_leftovers_total`` (``reindex.jobs.JobRunner.sweep``).
"""

from __future__ import annotations

from datetime import timedelta

import click
import structlog
from elastic_transport import TransportError
from elasticsearch import ApiError

from deleter.sweep import sweep as run_sweep
from policy_indexer.commands.run import open_store
from policy_indexer.settings import Settings
from store.errors import StoreError

log = structlog.get_logger(__name__)


@click.command()
@click.option("--dry-run", is_flag=True, help="Report leftovers without deleting them.")
@click.option("--grace-seconds", type=float, default=None,
              help="Leave chunks younger than this above their document's state "
                   "(default: settings.sweep_grace_seconds).")
@click.pass_obj
def sweep(settings: Settings, dry_run: bool, grace_seconds: float | None) -> None:
    """Delete chunks whose version is not their document's current one."""
    grace = settings.sweep_grace_seconds if grace_seconds is None else grace_seconds
    store = open_store(settings)
    try:
        if not store.client.indices.exists_alias(name=store.names.chunks):
            raise click.ClickException(
                f"no chunk index {store.names.chunks!r} at {settings.elasticsearch_url} "
                f"(index_prefix={settings.index_prefix!r}): nothing to sweep"
            )
        report = run_sweep(store, grace=timedelta(seconds=grace), dry_run=dry_run)
    except (StoreError, ApiError, TransportError) as exc:
        raise click.ClickException(
            f"sweep failed against {settings.elasticsearch_url}: {exc}"
        ) from exc
    finally:
        store.close()
    log.info("sweep finished", chunks_index=store.names.chunks, dry_run=dry_run,
             examined=report.examined, leftovers=dict(report.leftovers),
             deleted=report.deleted, kept_in_grace=report.kept_in_grace)
    verb = "would delete" if dry_run else "deleted"
    click.echo(f"examined {report.examined} chunks in {store.names.chunks!r}")
    if not report.total_leftovers:
        click.echo("no leftovers: nothing to do")
    for reason, count in sorted(report.leftovers.items()):
        click.echo(f"  {reason}: {count}")
    for sample in report.samples:
        click.echo(f"    {sample}")
    if report.kept_in_grace:
        click.echo(f"kept {report.kept_in_grace} chunks younger than the grace period ({grace:g}s)")
    click.echo(f"{verb} {report.total_leftovers if dry_run else report.deleted} chunks")
