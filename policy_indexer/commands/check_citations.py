"""``policy-indexer check-citations``: check a reply's citations against the index and its run.

Each ``--cite DOC_ID#CLAUSE[@VERSION]`` is one citation. ``--quote`` and ``--claim``
are given either once (they go with every ``--cite``) or once per ``--cite``, in
order (the n-th goes with the n-th). The runs the command can check are those of
the command line's own caller (``policy-indexer search`` records under ``@cli``);
``--labels`` are the permission labels to check with, as for ``search``.

Exit status: 0 every citation ok, 1 at least one is not, 2 bad input (a usage
error, an unknown run), 3 the index or the run log could not be read.
"""

from __future__ import annotations

import re
from datetime import date

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.search import SearchNotConfigured, check_once
from policy_indexer.settings import Settings
from retrieval.citations import CheckRequest, CheckResponse, Citation

_CITE = re.compile(r"^(?P<doc>[^#]+)#(?P<clause>[^@]+?)(?:@v?(?P<version>\d+))?$")
EXIT_NOT_OK = 1
EXIT_UNCHECKED = 3


def parse_cite(text: str) -> tuple[str, str, int | None]:
    """``DOC_ID#CLAUSE[@VERSION]`` (the version may be ``@3`` or ``@v3``)."""
    match = _CITE.match(text.strip())
    if match is None:
        raise click.BadParameter(
            f"{text!r} is not DOC_ID#CLAUSE[@VERSION] (for example refunds#4.2@3)",
            param_hint="--cite")
    version = match.group("version")
    return match.group("doc").strip(), match.group("clause").strip(), (
        int(version) if version is not None else None)


def _spread(values: tuple[str, ...], count: int, name: str) -> list[str | None]:
    if not values:
        return [None] * count
    if len(values) == 1:
        return [values[0]] * count
    if len(values) == count:
        return list(values)
    raise click.BadParameter(
        f"given {len(values)} times for {count} --cite: give it once (for every --cite) or "
        "once per --cite, in order", param_hint=name)


@click.command("check-citations")
@click.option("--run", "run_id", default=None, metavar="RUN_ID",
              help="The run_id of the search the reply used.")
@click.option("--cite", "cites", multiple=True, required=True,
              metavar="DOC_ID#CLAUSE[@VERSION]", help="A cited clause (repeatable).")
@click.option("--quote", "quotes", multiple=True,
              help="Words the reply quotes (once, or once per --cite).")
@click.option("--claim", "claims", multiple=True,
              help="The reply's sentence (once, or once per --cite).")
@click.option("--scope", multiple=True, help="A scope value of the order (repeatable; "
              "default: the run's).")
@click.option("--as-of", type=click.DateTime(formats=["%Y-%m-%d"]), default=None,
              help="The order's date (default: the run's, else today).")
@click.option("--labels", default="", help="Comma-separated permission labels to check with.")
@click.option("--json", "as_json", is_flag=True, help="Print the response as JSON.")
@click.pass_obj
@says_errors("the citations could not be checked", exit_code=EXIT_UNCHECKED,
             also=(SearchNotConfigured,))
def check_citations(  # noqa: PLR0917 (one parameter per click option)
    settings: Settings, run_id: str | None, cites: tuple[str, ...], quotes: tuple[str, ...],
    claims: tuple[str, ...], scope: tuple[str, ...], as_of: object, labels: str,
    as_json: bool,
) -> None:
    """Check a reply's citations: exist, current, returned, permitted, in scope and date,
    quote and numbers in the clause. Exit 0 all ok, 1 one not, 2 bad input."""
    parsed = [parse_cite(c) for c in cites]
    quote_of, claim_of = (_spread(quotes, len(parsed), "--quote"),
                          _spread(claims, len(parsed), "--claim"))
    day: date | None = as_of.date() if hasattr(as_of, "date") else None
    request = CheckRequest(
        run_id=run_id, scope=list(scope) or None, as_of=day,
        citations=[Citation(document_id=d, clause=c, version=v, quote=q, claim=m)
                   for (d, c, v), q, m in zip(parsed, quote_of, claim_of, strict=True)])
    caller = frozenset(label.strip() for label in labels.split(",") if label.strip())
    response = check_once(settings, request, caller)
    if as_json:
        click.echo(response.model_dump_json(indent=2))
    else:
        _print(response)
    if not response.ok:
        raise SystemExit(EXIT_NOT_OK)


def _print(response: CheckResponse) -> None:
    scope = ", ".join(response.scope) or "any scope"
    click.echo(f"{'ok' if response.ok else 'NOT OK'}: {len(response.results)} citation(s), "
               f"order {scope} on {response.as_of}, run {response.run_id or 'none'}")
    for result in response.results:
        version = f"@v{result.version}" if result.version is not None else ""
        current = (f"(current v{result.current_version})"
                   if result.current_version is not None else "")
        click.echo(f"{'ok  ' if result.ok else 'FAIL'} {result.document_id}#{result.clause}"
                   f"{version} {current}".rstrip())
        for problem in result.problems:
            click.echo(f"     {problem.code}: {problem.detail}")
