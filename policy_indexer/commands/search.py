"""``policy-indexer search QUESTION``: ask the index as an agent would, and read the answer.

A readable view for people (status, then each passage with its document,
clause, scope, dates, version and link), or ``--json`` (the ``SearchResponse``
that ``POST /search`` and the MCP tool return). ``--labels`` are the permission
labels to search with: the command runs on the machine that holds the index,
so it is a view as that profile, not an access control (HTTP and MCP callers
get their labels from their API key).
"""

from __future__ import annotations

from datetime import date

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.search import search_once
from policy_indexer.settings import Settings
from retrieval.models import SearchRequest, SearchResponse


@click.command()
@click.argument("question")
@click.option("--scope", multiple=True, help="A scope value of the order (repeatable).")
@click.option("--as-of", type=click.DateTime(formats=["%Y-%m-%d"]), default=None,
              help="Only passages valid on this date (default: today).")
@click.option("--labels", default="", help="Comma-separated permission labels to search with.")
@click.option("--k", type=int, default=5, show_default=True, help="Ranked passages (1-10).")
@click.option("--no-neighbours", is_flag=True, help="Do not append neighbouring passages.")
@click.option("--language", default=None, help="The question's language (default: detected).")
@click.option("--json", "as_json", is_flag=True, help="Print the response as JSON.")
@click.pass_obj
@says_errors("search failed", also=(ValueError,))
def search(  # noqa: PLR0917 (one parameter per click option)
    settings: Settings, question: str, scope: tuple[str, ...], as_of: object, labels: str,
    k: int, no_neighbours: bool, language: str | None, as_json: bool,
) -> None:
    """Search the policy library; passages with their scope and dates, or 'no document'."""
    day: date | None = as_of.date() if hasattr(as_of, "date") else None
    request = SearchRequest(question=question, scope=list(scope), as_of=day, k=k,
                            neighbours=not no_neighbours, language=language)
    caller = frozenset(label.strip() for label in labels.split(",") if label.strip())
    response = search_once(settings, request, caller)
    if as_json:
        click.echo(response.model_dump_json(indent=2))
    else:
        _print(response)


def _print(response: SearchResponse) -> None:
    legs = " + ".join(response.legs) or "none"
    click.echo(f"{response.status}: {response.message}  "
               f"(as of {response.as_of}, {response.took_ms:.0f} ms, legs: {legs})")
    click.echo(f"run {response.run_id or 'not recorded'} (check a reply's citations: "
               "policy-indexer check-citations --run RUN_ID --cite DOC_ID#CLAUSE@VERSION)")
    for n, p in enumerate(response.passages, 1):
        where = " > ".join(p.heading_path) or p.clause
        via = "" if p.via == "ranked" else f"  [neighbour of {p.neighbour_of}]"
        click.echo("")
        click.echo(f"{n}. {p.title or p.document_id}  §{p.clause}  ({p.document_id} v{p.version})"
                   f"  score {p.score:.3f}{via}")
        click.echo(f"   {where}")
        dates = validity(p.valid_from, p.valid_to)
        if p.effective_date:
            dates += f", effective {p.effective_date}"
        click.echo(f"   scope {', '.join(p.scope) or 'everyone'}; {dates}; labels "
                   f"{', '.join(p.access_labels) or 'none'}")
        if p.link:
            click.echo(f"   {p.link}")
        if p.freshness is not None and p.freshness.behind_source:
            click.echo(f"   STALE: the source has v{p.freshness.source_version} "
                       f"({p.freshness.lag_seconds or 0:.0f} s behind)")
        for line in p.text.strip().splitlines()[:12]:
            click.echo(f"   | {line}")


def validity(valid_from: date | None, valid_to: date | None) -> str:
    """The passage's dates as a person reads them (both ends inclusive, as the filter)."""
    if valid_from and valid_to:
        return f"valid {valid_from} to {valid_to}"
    if valid_from:
        return f"valid from {valid_from}"
    if valid_to:
        return f"valid until {valid_to}"
    return "valid on any date"
