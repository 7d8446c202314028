"""``policy-indexer serve``: POST /search and the MCP tool over streamable HTTP (/mcp).

Callers authenticate with ``Authorization: Bearer <key>``; each key maps to its
permission labels in ``POLICY_INDEXER_SEARCH_API_KEYS``.
"""

from __future__ import annotations

import click

from policy_indexer.runtime.search import SearchNotConfigured, serve_search
from policy_indexer.settings import Settings
from store.errors import StoreError


@click.command()
@click.pass_obj
def serve(settings: Settings) -> None:
    """Serve POST /search and /mcp (streamable HTTP), /healthz and /metrics."""
    try:
        serve_search(settings)
    except SearchNotConfigured as exc:
        raise click.ClickException(str(exc)) from exc
    except StoreError as exc:
        raise click.ClickException(f"cannot open the index: {exc}") from exc
