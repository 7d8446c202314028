"""``policy-indexer status [--json]``: how fresh the index is, in either mode.

Prints the report of ``policy_indexer.runtime.status``: every document's
version in the source and in the index, lag, chunks, leftovers, dead letters.
Exits 1 when the index cannot be read.
"""

from __future__ import annotations

import json

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.status import build_report
from policy_indexer.settings import Settings
from policy_indexer.status_report import StatusReport

TABLE_ROWS = 40


def _fmt_lag(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return f"{seconds:.0f}s" if seconds < 3600 else f"{seconds / 3600:.1f}h"


def _print_table(report: StatusReport) -> None:
    rows = sorted(report.documents, key=lambda d: (-(d.lag_seconds or 0.0), d.document_id))
    width = max([len("DOCUMENT"), *(len(d.document_id) for d in rows[:TABLE_ROWS])])
    click.echo(f"{'DOCUMENT':<{width}}  {'SOURCE':>6}  {'INDEX':>6}  {'LAG':>7}  "
               f"{'CHUNKS':>6}  STATUS")
    for d in rows[:TABLE_ROWS]:
        src = "-" if d.source_version is None else f"v{d.source_version}"
        idx = "-" if d.indexed_version is None else f"v{d.indexed_version}"
        idx += "x" if d.deleted_in_index else ""
        click.echo(f"{d.document_id:<{width}}  {src:>6}  {idx:>6}  {_fmt_lag(d.lag_seconds):>7}  "
                   f"{d.chunks:>6}  {d.status}{f' ({d.reason})' if d.reason else ''}")
    if len(rows) > TABLE_ROWS:
        click.echo(f"... and {len(rows) - TABLE_ROWS} more (most lagging first; --json for all)")
    unknown = "unknown (no source configured)"
    click.echo("")
    click.echo(f"mode: {report.mode}   index: {report.index}   source: {report.source or '-'}")
    click.echo(f"documents: {len(rows)}   behind: "
               f"{report.behind if report.source else unknown}   max lag: "
               f"{_fmt_lag(report.max_lag_seconds) if report.source else unknown}")
    dead = "unknown (Kafka unreachable)" if report.dead_letters is None else report.dead_letters
    queued = "" if report.queued is None else f"   queued: {report.queued}"
    click.echo(f"leftover versions: {report.leftover_versions}   dead letters: {dead}{queued}")
    click.echo(f"last reindex: {report.last_reindex.isoformat() if report.last_reindex else '-'}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (for scripts).")
@click.pass_obj
@says_errors("cannot read the index")
def status(settings: Settings, as_json: bool) -> None:
    """Freshness of the index: versions in source and index, lag, leftovers, dead letters."""
    report = build_report(settings)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        _print_table(report)
