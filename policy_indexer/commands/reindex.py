"""``policy-indexer reindex``: reconcile the index with the source once, by hand.

Prints the decision for every document (counts, with samples) and what was
applied. Exit status: 0 success, 1 failed (listing failed, a document could
not be applied, store unreachable), 3 refused (deletions above the cap: check,
then run again with ``--allow-mass-delete``).
"""

from __future__ import annotations

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.reconcile import reconcile_once
from policy_indexer.settings import Settings
from reindex.model import Outcome, ReconcileReport

EXIT_FAILED = 1
EXIT_REFUSED = 3


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
    for refusal in report.content_refused[:20]:
        click.echo(f"refused document {refusal} (fix it at the source)")
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
@says_errors("reindex failed")
def reindex(settings: Settings, dry_run: bool, allow_mass_delete: bool) -> None:
    """Reconcile the index with the source: reindex, repair, delete what is gone."""

    def on_signal(name: str) -> None:
        click.echo(f"{name}: stopping after the current document", err=True)

    outcome = reconcile_once(settings, dry_run=dry_run, allow_mass_delete=allow_mass_delete,
                             on_stop_signal=on_signal)
    report = outcome.report
    if report is None:
        click.echo(f"not run: the reconcile lease is {outcome.lease_skip}", err=True)
        raise SystemExit(EXIT_FAILED)
    print_report(report)
    if report.outcome is Outcome.FAILED:
        raise SystemExit(EXIT_FAILED)
    if report.outcome is Outcome.REFUSED:
        raise SystemExit(EXIT_REFUSED)
