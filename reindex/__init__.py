"""The nightly backup reindex: reconcile the index with the source, safely, on a schedule.

- ``index_view``: what the index holds per document (states + chunks actually present).
- ``plan``: the decision per document (pure).
- ``reconcile``: list the source, read the index, decide, act through the worker's
  ``EventProcessor``; the safety rules (failed/partial listing, deletion cap).
- ``repair``: rewrite a document's chunks at the version the index already holds.
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
