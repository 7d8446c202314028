"""``policy-indexer reindex``: reconcile the index with the source once, by hand.

Prints the decision for every document (counts, with samples) and what was
applied. Exit status: 0 success, 1 failed (listing failed, a document could
not be applied, store unreachable), 3 refused (deletions above the cap: check,
then run again with ``--allow-mass-delete``).
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from datetime import timedelta
from types import FrameType

import click

from metrics.definitions import ReindexMetrics
from policy_indexer.commands.run import kill_hook, open_store
from policy_indexer.embedded import index_path
from policy_indexer.settings import Settings
from policy_indexer.sources import SourceNotConfiguredError, open_configured_source
from reindex.backends_es import ElasticsearchLeaseBackend, ElasticsearchRunLog
from reindex.backends_sqlite import SchedulerDatabase
from reindex.errors import LeaseError
from reindex.jobs import JobRunner
from reindex.lease import Lease, LeaseBackend
from reindex.model import Outcome, ReconcileReport
from reindex.runs import RunLog
from sources.base import Source
from store.base import Store
from store.elasticsearch import ElasticsearchStore
from store.errors import StoreError
from store.sqlite import SQLiteStore

EXIT_FAILED = 1
EXIT_REFUSED = 3
SCHEDULER_FILE = "scheduler.sqlite3"


def open_index(settings: Settings) -> Store:
    """The pipeline's store: Elasticsearch (kafka) or the embedded SQLite index."""
    if settings.pipeline == "kafka":
        return open_store(settings)
    return SQLiteStore(index_path(settings))


def open_runner(
    settings: Settings,
    source: Source,
    store: Store,
    *,
    trigger: str,
    metrics: ReindexMetrics | None = None,
) -> JobRunner:
    """The job runner with the run log and lease next to the pipeline's index."""
    closers: list[Callable[[], None]] = [store.close, source.close]
    run_log: RunLog
    backend: LeaseBackend
    if isinstance(store, ElasticsearchStore):
        run_log = ElasticsearchRunLog(store.client, settings.index_prefix)
        backend = ElasticsearchLeaseBackend(store.client, settings.index_prefix)
    else:
        database = SchedulerDatabase(settings.embedded_dir / SCHEDULER_FILE)
        run_log, backend = database, database
        closers.append(database.close)
    store.ensure_ready()
    run_log.ensure_ready()
    backend.ensure_ready()

    def close() -> None:
        for closer in closers:
            closer()

    return JobRunner(
        source=source,
        store=store,
        run_log=run_log,
        lease=Lease(backend),
        lease_ttl=timedelta(seconds=settings.scheduler_lease_seconds),
        metrics=metrics,
        max_delete_fraction=settings.reindex_max_delete_fraction,
        batch_size=settings.reindex_batch_size,
        sweep_grace=timedelta(seconds=settings.sweep_grace_seconds),
        trigger=trigger,
        spacing=(timedelta(seconds=settings.reindex_misfire_grace_seconds)
                 if trigger == "scheduled" else None),
        on_close=close,
    )


def print_report(report: ReconcileReport, *, allow_flag: str = "--allow-mass-delete") -> None:
    mode = " (dry run: nothing changed)" if report.dry_run else ""
    click.echo(
        f"reconcile{mode}: source lists {report.source_documents} documents, "
        f"index holds {report.indexed_documents} live"
    )
    for decision, count in sorted(report.decided.items()):
        click.echo(f"  {decision}: {count}")
    for reason, count in sorted(report.reasons.items()):
        click.echo(f"    reason {reason}: {count}")
    for sample in report.samples:
        click.echo(f"    {sample}")
    if report.applied:
        done = ", ".join(f"{k} {v}" for k, v in sorted(report.applied.items()))
        click.echo(f"applied: {done}")
    if report.refused:
        click.echo(
            f"REFUSED: {report.decided.get('delete', 0)} deletions exceed the cap of "
            f"{report.deletions_allowed} ({report.indexed_documents} indexed documents x "
            f"max_delete_fraction); nothing was deleted. If the source really lost these "
            f"documents, run again with {allow_flag}.",
            err=True,
        )
    for failure in report.failures[:20]:
        click.echo(f"FAILED document {failure}", err=True)
    if report.error:
        click.echo(f"FAILED: {report.error}; nothing was deleted after the failure", err=True)
    if report.seconds:
        click.echo("seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in report.seconds.items()))
    click.echo(f"outcome: {report.outcome.value}")


@click.command()
@click.option("--dry-run", is_flag=True, help="Decide and print, change nothing.")
@click.option("--allow-mass-delete", is_flag=True,
              help="Confirm deletions above the cap (settings.reindex_max_delete_fraction).")
@click.pass_obj
def reindex(settings: Settings, dry_run: bool, allow_mass_delete: bool) -> None:
    """Reconcile the index with the source: reindex, repair, delete what is gone."""
    try:
        source = open_configured_source(settings)
    except (SourceNotConfiguredError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    store = open_index(settings)
    try:
        runner = open_runner(settings, source, store, trigger="manual")
    except (StoreError, LeaseError) as exc:
        store.close()
        source.close()
        raise click.ClickException(f"reindex cannot start: {exc}") from exc

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        click.echo(f"{signal.Signals(signum).name}: stopping after the current document", err=True)
        runner.stop_event.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        report = runner.reconcile(
            dry_run=dry_run,
            allow_mass_delete=allow_mass_delete,
            checkpoint=kill_hook(settings.reindex_kill_at),
        )
    except (StoreError, LeaseError) as exc:  # the lease or the run record, not the run
        raise click.ClickException(f"reindex failed: {exc}") from exc
    finally:
        runner.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if report is None:
        click.echo(f"not run: the reconcile lease is {runner.last_skip}", err=True)
        raise SystemExit(EXIT_FAILED)
    print_report(report)
    if report.outcome is Outcome.FAILED:
        raise SystemExit(EXIT_FAILED)
    if report.outcome is Outcome.REFUSED:
        raise SystemExit(EXIT_REFUSED)
