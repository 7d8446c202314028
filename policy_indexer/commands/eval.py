"""``policy-indexer eval QA.jsonl``: recall@k, MRR, refusals and permission leaks of the search.

Rows in the format of ``shared/eval/basecamp-qa.jsonl`` (its README defines a
hit: the evidence inside one of the first k *ranked* passages). ``--profile
NAME=label,label`` maps a row's ``profile`` to the labels it searches with
(default: ``public=public``). ``--json`` for CI; exit 1 on a permission leak.
"""

from __future__ import annotations

from pathlib import Path

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.search import evaluate_file
from policy_indexer.settings import Settings


@click.command(name="eval")
@click.argument("qa", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--profile", "profiles", multiple=True,
              help="NAME=label,label: the labels rows of profile NAME search with.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
@says_errors("eval failed", also=(ValueError,))
def eval_command(settings: Settings, qa: Path, profiles: tuple[str, ...], as_json: bool) -> None:
    """Measure retrieval on a question set (recall@1/3/5/10, MRR, refusals, leaks)."""
    mapping: dict[str, frozenset[str]] = {"public": frozenset({"public"})}
    for entry in profiles:
        name, sep, labels = entry.partition("=")
        if not sep or not name.strip():
            raise click.UsageError(f"--profile {entry!r}: expected NAME=label,label")
        mapping[name.strip()] = frozenset(x.strip() for x in labels.split(",") if x.strip())
    report = evaluate_file(settings, qa, mapping)
    if as_json:
        click.echo(report.to_json())
    else:
        click.echo(report.render())
    if report.leaks:
        raise SystemExit(1)
