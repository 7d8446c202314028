"""The metric namespace is written once, in ``foundation/metric_names.py``.

Every module that declares metrics takes ``NAMESPACE`` from there; a module that
wrote the prefix again (``namespace="policy_indexer"``, ``"policy_indexer_" + ...``)
would let the names drift from what dashboards and alerts query.
"""

from __future__ import annotations

import re
from pathlib import Path

from support.import_boundaries import LAYER

from foundation.metric_names import NAMESPACE

ROOT = Path(__file__).resolve().parents[3]
PREFIX_LITERAL = re.compile(r"""["']policy_indexer_?["']""")
METRICS_MODULES = ("metrics/definitions.py", "metrics/freshness_definitions.py",
                   "retrieval/metrics.py", "webhooks/metrics.py", "embeddings/metrics.py")


def test_no_package_writes_the_prefix_but_metric_names() -> None:
    written = [f"{path.relative_to(ROOT)}:{n}"
               for package in LAYER for path in sorted((ROOT / package).rglob("*.py"))
               for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if PREFIX_LITERAL.search(line)]
    assert written == ["foundation/metric_names.py:10"]


def test_every_metrics_module_takes_the_namespace_from_metric_names() -> None:
    for module in METRICS_MODULES:
        source = (ROOT / module).read_text(encoding="utf-8")
        assert "from foundation.metric_names import NAMESPACE" in source, module
    assert NAMESPACE == "policy_indexer"
