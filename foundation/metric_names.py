"""The namespace of every metric the project exports: ``policy_indexer_<name>``.

Every module that declares metrics (``metrics/``, ``retrieval/metrics.py``,
``webhooks/metrics.py``, ``embeddings/metrics.py``) takes it from here, so the
prefix the dashboards, alerts and docs query is written once.
"""

from __future__ import annotations

NAMESPACE = "policy_indexer"
