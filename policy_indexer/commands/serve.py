"""``policy-indexer serve``: POST /search and the MCP tool over streamable HTTP (/mcp).

Callers authenticate with ``Authorization: Bearer <key>``; each key maps to its
permission labels in ``POLICY_INDEXER_SEARCH_API_KEYS``.
"""

from __future__ import annotations

import click

from policy_indexer.cli_errors import says_errors
from policy_indexer.runtime.search import serve_search
from policy_indexer.settings import Settings


@click.command()
@click.pass_obj
@says_errors("cannot open the index")
def serve(settings: Settings) -> None:
    """Serve POST /search and /mcp (streamable HTTP), /healthz and /metrics."""
    serve_search(settings)
