"""Sub-commands of ``policy-indexer``, one module each, loaded only when run.

``COMMANDS`` maps a command's name to its module and its one-line help, so
``policy-indexer --help`` lists every command without importing any of them
(``policy_indexer.cli.LazyGroup``). A module's click command has the same name
as the command (``policy_indexer.commands.run:run``).
"""

from __future__ import annotations

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("policy_indexer.commands.run",
            "Run the indexing pipeline (embedded by default; PIPELINE=kafka for the workers)."),
    "webhook": ("policy_indexer.commands.webhook",
                "Serve POST /webhooks/cms, /healthz, /readyz and /metrics."),
    "replay": ("policy_indexer.commands.replay",
               "Publish a corpus change log (shared/corpora format) as ChangeEvents, in order."),
    "status": ("policy_indexer.commands.status",
               "Freshness of the index: versions in source and index, lag, leftovers."),
    "monitor": ("policy_indexer.commands.monitor",
                "Measure how far the index is behind the source, and serve it on /metrics."),
    "reindex": ("policy_indexer.commands.reindex",
                "Reconcile the index with the source: reindex, repair, delete what is gone."),
    "scheduler": ("policy_indexer.commands.scheduler",
                  "Run the reconcile on its cron schedule and the sweep at its interval."),
    "sweep": ("policy_indexer.commands.sweep",
              "Delete chunks whose version is not their document's current one."),
    "chunk": ("policy_indexer.commands.chunk", "Print the chunks of one document as JSON lines."),
    "config": ("policy_indexer.commands.config",
               "Print the effective settings as JSON, with secrets masked."),
}
