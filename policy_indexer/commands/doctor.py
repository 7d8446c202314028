"""``policy-indexer doctor [--json]``: check what a deployment needs; exit 1 if anything fails."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from policy_indexer.runtime.doctor import run_checks
from policy_indexer.settings import Settings


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per check.")
@click.pass_obj
def doctor(settings: Settings, as_json: bool) -> None:
    """Check settings, secrets, Kafka and its topics, Elasticsearch and its index, the source.

    Exits 1 when a check fails, each failure on its own line with what to set.
    Changes nothing.
    """
    checks = run_checks(settings)
    for check in checks:
        click.echo(json.dumps(asdict(check)) if as_json else check.line())
    failed = [c for c in checks if c.outcome == "fail"]
    if failed:
        if not as_json:
            click.echo(f"{len(failed)} problem(s) found", err=True)
        raise SystemExit(1)
