"""``policy-indexer mcp``: the ``search_policy`` tool for an MCP client, on stdin/stdout.

The client (an agent host) starts this command; its one caller gets the labels of
``POLICY_INDEXER_MCP_API_KEY``. Over HTTP, ``policy-indexer serve`` serves the same
tool at ``/mcp`` with a key per request.
"""

from __future__ import annotations

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.search import serve_mcp_stdio
from policy_indexer.settings import Settings


@click.command()
@click.pass_obj
@says_errors("cannot open the index")
def mcp(settings: Settings) -> None:
    """Serve the search_policy MCP tool on stdio.

    The caller gets the labels of POLICY_INDEXER_MCP_API_KEY (one of the keys in
    POLICY_INDEXER_SEARCH_API_KEYS). Over HTTP, `policy-indexer serve` serves the same
    tool at /mcp with a key per request.
    """
    serve_mcp_stdio(settings)
