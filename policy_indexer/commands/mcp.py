"""``policy-indexer mcp``: the ``search_policy`` tool for an MCP client, on stdin/stdout.

The client (an agent host) starts this command; its one caller gets the labels of
``POLICY_INDEXER_MCP_API_KEY``. Over HTTP, ``policy-indexer serve`` serves the same
tool at ``/mcp`` with a key per request.
"""

from __future__ import annotations

import click

from policy_indexer.runtime.search import SearchNotConfigured, serve_mcp_stdio
from policy_indexer.settings import Settings
from store.errors import StoreError


@click.command()
@click.pass_obj
def mcp(settings: Settings) -> None:
    """Serve the search_policy MCP tool on stdio.

    The caller gets the labels of POLICY_INDEXER_MCP_API_KEY (one of the keys in
    POLICY_INDEXER_SEARCH_API_KEYS). Over HTTP, `policy-indexer serve` serves the same
    tool at /mcp with a key per request.
    """
    try:
        serve_mcp_stdio(settings)
    except SearchNotConfigured as exc:
        raise click.ClickException(str(exc)) from exc
    except StoreError as exc:
        raise click.ClickException(f"cannot open the index: {exc}") from exc
