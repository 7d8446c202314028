"""``policy-indexer embed [--once]``: give every chunk its vector.

Without ``--once``, a process (with ``/metrics``) that follows the index: chunks
are keyword-searchable as soon as they are written and get their vectors a
moment later (``policy_indexer_vector_lag_seconds``). With ``--once``, it
encodes everything that lacks a vector of the configured model with a progress
bar and exits: the re-embedding job after a model change (resumable: it only
ever asks for what is missing).
"""

from __future__ import annotations

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.search import embed
from policy_indexer.settings import Settings


@click.command(name="embed")
@click.option("--once", is_flag=True, help="Encode what is missing, then exit.")
@click.pass_obj
@says_errors("cannot open the index")
def embed_command(settings: Settings, once: bool) -> None:
    """Encode the chunks that lack a vector (a process, or --once)."""
    written = embed(settings, once=once)
    if once:
        click.echo(f"embedded {written} chunks")
