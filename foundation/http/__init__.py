"""The HTTP edge every server of the project shares (layer 0, under ``foundation``).

- ``limits``: ``HttpLimits``, how long a client may take and how many may connect
  (no uvicorn import: the settings build one);
- ``server``: uvicorn held to those limits (``GuardedH11``, ``server_config``,
  ``serve``) and ``ServerThread``, an app served in a thread;
- ``edge``: content type, bounded body reading, JSON, the JSON refusal and the
  validation errors a POST route answers with;
- ``routes``: ``/healthz``, ``/readyz`` and ``/metrics``.

The webhook receiver and the CMS adapters' endpoints (``webhooks``), the search
API (``retrieval.http``) and every process's metrics server
(``policy_indexer.runtime.http``) are built on it. Importing the package imports
none of them.
"""
