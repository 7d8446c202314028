"""The reconcile's defaults, here once: ``reindex.reconcile``, ``reindex.jobs`` and the
reindex settings take them. No imports, so the settings read them at start for free."""

from __future__ import annotations

# A reconcile refuses to delete more than this fraction of the indexed documents.
MAX_DELETE_FRACTION = 0.10
# Change events handed to the indexer's batch processing at once.
BATCH_SIZE = 200
