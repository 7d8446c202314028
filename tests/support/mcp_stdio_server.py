"""A stdio MCP server process for the tests: the fake searcher behind ``run_stdio``.

Spawned by tests/unit/retrieval/test_mcp_server.py through the ``mcp`` client as
``python -m support.mcp_stdio_server`` (``tests/`` on PYTHONPATH). Like the real
command, it resolves its own key once at start: ``POLICY_SEARCH_CREDENTIALS``
(JSON) and ``POLICY_SEARCH_KEY`` (the key this process runs as).
stdout carries the protocol, so logs go to stderr.
"""

from __future__ import annotations

import os
import sys

import structlog

from retrieval.credentials import Credentials
from retrieval.mcp_server import labels_for_key, run_stdio
from support.mcp_searcher import LabelFilteringSearcher, sample_passages


def main() -> None:
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    credentials = Credentials.from_json(os.environ["POLICY_SEARCH_CREDENTIALS"])
    labels = labels_for_key(credentials, os.environ["POLICY_SEARCH_KEY"])
    run_stdio(LabelFilteringSearcher(sample_passages()), labels)


if __name__ == "__main__":
    main()
