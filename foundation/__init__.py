"""What every package shares, below all of them (layer 0), one idea a module.

- ``es_errors``: every Elasticsearch call's errors translated into the caller's
  own error tree, with one rule for transient, blocked, refused credentials and
  TLS not verified (the store, the search run log, the reindex run log and
  lease, the embedding cache all call through it).
- ``metric_names``: the namespace of every metric the project exports.
- ``validation``: a pydantic ``ValidationError`` in the project's one-line text,
  or as field errors without the input.
- ``comparison``: the source against the index, a verdict per document, and the
  one owner rule (the monitor, ``status``, the passage freshness, the reconcile).
- ``http``: the HTTP edge of every server: limits, the guarded uvicorn server
  and its thread, content type, bounded bodies, JSON refusals, probes and
  ``/metrics`` (its own package: ``foundation/http/__init__.py``).

Importing the package imports none of them (the embedded mode never loads the
Elasticsearch client).
"""
