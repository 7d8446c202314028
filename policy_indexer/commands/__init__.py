"""Sub-commands of ``policy-indexer``, one module each, loaded only when run.

``COMMANDS`` maps a command's name to ``module:attribute`` and its one-line
help, so ``policy-indexer --help`` lists every command without importing any of
them (``policy_indexer.cli.LazyGroup``).
"""

from __future__ import annotations

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("policy_indexer.commands.run:run",
            "Run the indexing pipeline (embedded by default; PIPELINE=kafka for the workers)."),
    "webhook": ("policy_indexer.commands.webhook:webhook",
                "Serve the webhook receiver (/webhooks/cms, adapters); `sign`/`send` test it."),
    "replay": ("policy_indexer.commands.replay:replay",
               "Publish a corpus change log (shared/corpora format) as ChangeEvents, in order."),
    "status": ("policy_indexer.commands.status:status",
               "Freshness of the index: versions in source and index, lag, leftovers."),
    "monitor": ("policy_indexer.commands.monitor:monitor",
                "Measure how far the index is behind the source, and serve it on /metrics."),
    "reindex": ("policy_indexer.commands.reindex:reindex",
                "Reconcile the index with the source: reindex, repair, delete what is gone."),
    "scheduler": ("policy_indexer.commands.scheduler:scheduler",
                  "Run the reconcile on its cron schedule and the sweep at its interval."),
    "sweep": ("policy_indexer.commands.sweep:sweep",
              "Delete chunks whose version is not their document's current one."),
    "chunk": ("policy_indexer.commands.chunk:chunk",
              "Print the chunks of one document as JSON lines."),
    "search": ("policy_indexer.commands.search:search",
               "Search the policy library: passages with scope and dates, or 'no document'."),
    "check-citations": ("policy_indexer.commands.check_citations:check_citations",
                        "Check a reply's citations against the index and its search run."),
    "serve": ("policy_indexer.commands.serve:serve",
              "Serve POST /search and the MCP tool (/mcp) for agents, with API keys."),
    "mcp": ("policy_indexer.commands.mcp:mcp", "Serve the search_policy MCP tool on stdio."),
    "eval": ("policy_indexer.commands.eval:eval_command",
             "Measure retrieval on a question set: recall@k, MRR, refusals, leaks."),
    "embed": ("policy_indexer.commands.embed:embed_command",
              "Give every chunk its vector (a process, or --once for a re-embedding job)."),
    "dead-letters": ("policy_indexer.commands.dead_letters:dead_letters",
                     "List, show and retry dead letters (events the workers could not index)."),
    "topics": ("policy_indexer.commands.topics:topics",
               "Create or check the Kafka topics (partitions, replicas, min ISR, max size)."),
    "doctor": ("policy_indexer.commands.doctor:doctor",
               "Check what a deployment needs (Kafka, topics, Elasticsearch, source, secrets)."),
    "config": ("policy_indexer.commands.config:config",
               "Print the effective settings as JSON, with secrets masked."),
}
