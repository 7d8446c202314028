"""``policy-indexer dead-letters list|show|retry``: what the workers could not index, and why.

In either mode (``policy_indexer.runtime.dead_letters``). ``list`` prints one
line a failed event (id, document, reason, error); ``show ID`` the letter and
its original value; ``retry ID...`` (or ``--all``) puts letters back on the
change topic, after the document or the code was fixed. Exits 1 when the
dead letters cannot be read, 2 for an id that is not a dead letter.
"""

from __future__ import annotations

import json

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.dead_letters import (
    list_dead_letters,
    retry_dead_letters,
    show_dead_letter,
)
from policy_indexer.settings import Settings

ERROR_CHARS = 160


@click.group("dead-letters")
def dead_letters() -> None:
    """List, show and retry dead letters (events the workers could not index)."""


@dead_letters.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.pass_obj
@says_errors("cannot list dead letters")
def list_command(settings: Settings, as_json: bool) -> None:
    """One line per failed event: id, document, reason, error."""
    letters = list_dead_letters(settings)
    for letter in letters:
        if as_json:
            click.echo(json.dumps(letter.summary()))
        else:
            error = letter.error.replace("\n", " ")[:ERROR_CHARS]
            click.echo(f"{letter.letter_id}  {letter.document_id!s}  {letter.reason}  {error}")
    if not as_json:
        click.echo(f"{len(letters)} dead letters")


@dead_letters.command("show")
@click.argument("letter_id")
@click.pass_obj
@says_errors("cannot read dead letters")
def show_command(settings: Settings, letter_id: str) -> None:
    """A dead letter in full, with its original value."""
    letter = show_dead_letter(settings, letter_id)
    body = letter.summary()
    body["value"] = None if letter.value is None else letter.value.decode("utf-8", "replace")
    click.echo(json.dumps(body, indent=2))


@dead_letters.command("retry")
@click.argument("letter_ids", nargs=-1)
@click.option("--all", "retry_all", is_flag=True, help="Retry every dead letter.")
@click.pass_obj
@says_errors("retry failed")
def retry_command(settings: Settings, letter_ids: tuple[str, ...], retry_all: bool) -> None:
    """Put dead letters back on the change topic (after fixing what made them fail)."""
    if bool(letter_ids) == retry_all:
        raise click.UsageError("name the dead letters to retry, or --all (not both)")
    ids = [d.letter_id for d in list_dead_letters(settings)] if retry_all else list(letter_ids)
    moved = retry_dead_letters(settings, ids)
    click.echo(f"retried {moved} dead letters")
