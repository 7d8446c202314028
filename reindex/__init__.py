"""The nightly backup reindex: reconcile the index with the source, safely, on a schedule.

- ``index_view``: what the index holds per document (states + chunks actually present).
- ``plan``: the decision per document (pure).
- ``reconcile``: read the index, list the source, decide, act through the indexing
  core the workers use (``indexing.Indexer``; repairs through ``indexing.repair``).
- ``safety``: a listing is whole or the run fails; the deletion cap.
- ``runs``: the record of every run (start, end, outcome, counts).
- ``lease``: only one scheduler replica acts at a time.
- ``jobs`` and ``scheduler``: the reconcile and the sweep as APScheduler jobs.

Errors::

    ReindexError
    ├── ListingFailedError      the source listing failed, was empty or inconsistent:
    │                           the run deletes nothing and is reported failed
    ├── RunInterrupted          a stop was asked for (SIGTERM, lost lease) mid-run
    └── LeaseError              the lease backend could not be read or written
"""
